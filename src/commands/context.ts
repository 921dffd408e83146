/** What every command gets: where the file is. Opening and closing it lives here. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { OperationError } from '../domain/errors.js';
import { withFileFaults, withServerFaults } from '../store/faults.js';
import { removeStaleTemps, tempName } from '../store/leftovers.js';
import { checkDbPath, openDb, type Db } from '../store/open.js';
import { inspectDbPath } from '../store/path.js';
import { PRIVATE_FILE } from '../platform/private.js';
import { isPgUrl } from '../domain/db-url.js';
import type { RowStream } from './results.js';
import type { LeftRunRow } from '../store/runs.js';
import { realRuntime, type ProcessRuntime } from '../platform/runtime.js';

export interface Ctx {
  dbPath: string;
  /**
   * Called on a write command's result before its transaction commits: a result that cannot be
   * shown (an unknown `-c` column) throws, and the change is rolled back with it.
   */
  checkResult?: (result: unknown) => void;
  /**
   * Whether a run left `running` (its orchestrator gone) still goes, and the pid to name for it;
   * null once it cannot be going. Unset: the exec driver's run files and processes say
   * (commands/live-runs.ts), and no other driver's runs outlive dcm. The simulator's sites outlive
   * its simulated processes, and answer for their own runs (sim/world.ts).
   */
  runLives?: (left: LeftRunRow) => number | null;
  /**
   * Whether a run left `running` whose processes are gone ended with an end recorded where the next
   * apply reads it (the exec driver's status file): an abort with no orchestrator leaves it for that
   * apply rather than calling it cut off. Unset: the exec driver's files say; the simulator's sites
   * answer for their own.
   */
  runEnded?: (left: LeftRunRow) => boolean;
  /**
   * Several hosts share the store (their workers, their runs' claims and ends in it): a server's
   * always. Unset: a server's address says; the simulator runs several hosts on a file.
   */
  shared?: boolean;
  /**
   * The runtime the command runs on (platform/runtime.ts): its clock stamps what it writes, and its
   * process table says whether an orchestrator lives. This process's when unset; the simulator's
   * operator has its own.
   */
  runtime?: ProcessRuntime;
  /**
   * The file was missing: a write command created it (`true`), a read found none (`false`). The CLI
   * says so when the path is its default, ./dcm.db (issue 49: a shell in another folder, no
   * DCM_DB, listed an empty fleet and exited 0 without a word).
   */
  noFile?: (created: boolean) => void;
}

let real: ProcessRuntime | null = null;

/** Whether several hosts share the store `ctx` names (Ctx.shared). */
export function sharedStore(ctx: Ctx): boolean {
  return ctx.shared ?? isPgUrl(ctx.dbPath);
}

/** The command's runtime: the context's, else this process's. */
export function runtimeOf(ctx: Pick<Ctx, 'runtime'>): ProcessRuntime {
  return ctx.runtime ?? (real ??= realRuntime());
}

/** What a command gets when the CLI runs it: the file, and the CLI's answers to quiet and confirmation. */
export interface RunCtx extends Ctx {
  quiet: boolean;
  /**
   * dcmanager's confirmation of a high-risk command (apply, delete): with CLI_CONFIRMATIONS=enabled
   * and no `--yes`, ask on a terminal, refuse off one.
   */
  confirm: (yes: boolean | undefined) => Promise<void>;
}

/**
 * Run `fn` on the file in one BEGIN IMMEDIATE transaction, creating the file (and its schema) if it
 * is missing. A missing file is built under a temporary name and linked into place only once the
 * command has succeeded: bad input leaves no file behind, and a file another process created
 * meanwhile is never overwritten or removed (the command then runs again, on that file).
 */
export async function withWriteDb<T>(ctx: Ctx, fn: (db: Db) => T | Promise<T>): Promise<T> {
  if (isPgUrl(ctx.dbPath)) return await withServerFaults(ctx.dbPath, async () => runInTransaction((await openDb(ctx.dbPath, { create: true, clock: runtimeOf(ctx).clock }))!, ctx, fn));
  return await withFileFaults(ctx.dbPath, async () => {
    for (;;) {
      const p = inspectDbPath(ctx.dbPath);
      removeStaleTemps(p.real, runtimeOf(ctx));
      if (p.exists) return await runInTransaction((await openDb(ctx.dbPath, { create: true, clock: runtimeOf(ctx).clock }))!, ctx, fn);
      checkDbPath(ctx.dbPath, false);
      const tmp = tempName(p.real, runtimeOf(ctx).procs.self, crypto.randomBytes(4).toString('hex'));
      try {
        // Created 0600 before SQLite opens it: the file may hold a sysadmin password (SPEC §8).
        fs.closeSync(fs.openSync(tmp, 'wx', PRIVATE_FILE));
        let db: Db;
        try {
          db = (await openDb(tmp, { create: true, clock: runtimeOf(ctx).clock }))!;
        } catch (err) {
          if (err instanceof OperationError) throw new OperationError(err.message.split(tmp).join(ctx.dbPath));
          throw err;
        }
        // Closing the last connection checkpoints the WAL: the temporary file then holds everything.
        const result = await runInTransaction(db, ctx, fn);
        if (publish(tmp, p.real)) {
          ctx.noFile?.(true);
          return result;
        }
      } finally {
        for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(tmp + suffix, { force: true });
      }
    }
  });
}

/** Put the new file in place unless one exists already (then false). */
export function publish(tmp: string, file: string): boolean {
  try {
    fs.linkSync(tmp, file);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV') throw err;
  }
  // A file system without hard links: an exclusive copy still never overwrites.
  try {
    fs.copyFileSync(tmp, file, fs.constants.COPYFILE_EXCL);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** What a command's result prints: the Outcome's `result`, or the result itself. */
function printedOf(result: unknown): unknown {
  const r = result as { kind?: unknown; result?: unknown } | null;
  return r && typeof r === 'object' && r.kind === undefined && r.result !== undefined ? r.result : result;
}

async function runInTransaction<T>(db: Db, ctx: Ctx, fn: (db: Db) => T | Promise<T>): Promise<T> {
  try {
    // Inner `immediate()` calls become savepoints of this transaction.
    return await db
      .transaction(async (tx) => {
        const result = await fn(tx);
        // A command that says more than its result (notes, an exit code) is checked on the result
        // it prints: an unknown -c refuses `strategy update --gate-check …` before it commits.
        ctx.checkResult?.(printedOf(result));
        return result;
      })
      .immediate();
  } finally {
    db.close();
  }
}

/**
 * A write that only makes sense on a file that exists (delete, abort): `fn` runs in one BEGIN
 * IMMEDIATE transaction, its result checked before the commit; null when there is no file.
 */
export async function withExistingWriteDb<T>(ctx: Ctx, fn: (db: Db) => T | Promise<T>): Promise<T | null> {
  if (isPgUrl(ctx.dbPath)) {
    return await withServerFaults(ctx.dbPath, async () => {
      const db = await openDb(ctx.dbPath, { create: false, clock: runtimeOf(ctx).clock });
      return db ? await runInTransaction(db, ctx, fn) : null;
    });
  }
  return await withFileFaults(ctx.dbPath, async () => {
    removeStaleTemps(inspectDbPath(ctx.dbPath).real, runtimeOf(ctx));
    const db = await openDb(ctx.dbPath, { create: false, write: true, clock: runtimeOf(ctx).clock });
    if (!db) ctx.noFile?.(false);
    return db ? await runInTransaction(db, ctx, fn) : null;
  });
}

/** Run `fn` on the file, or return `empty` when the file does not exist (nothing is created). */
export async function withReadDb<T>(ctx: Ctx, empty: T, fn: (db: Db) => T | Promise<T>): Promise<T> {
  return await withStoreFaults(ctx.dbPath, async () => {
    const db = await openReader(ctx.dbPath, runtimeOf(ctx));
    if (!db) {
      ctx.noFile?.(false);
      return empty;
    }
    try {
      return await fn(db);
    } finally {
      db.close();
    }
  });
}

/**
 * Rows read lazily: each iteration opens the file (nothing when it is missing), runs `fn` and
 * yields its rows one by one, then closes the file, also when the reader stops early (a closed
 * pipe). The statement's iterator keeps one WAL read transaction open for the whole listing:
 * acceptable for a one-shot list (it lasts as long as its output takes to write, and a checkpoint
 * only waits for it), where gathering every row first (`.all()`) would hold the whole list in
 * memory. `--watch` keeps reading with `.all()` and letting go between frames.
 */
export function readRows<T>(ctx: Ctx, fn: (db: Db) => AsyncIterable<T>): RowStream<T> {
  return {
    streamed: true,
    async *[Symbol.asyncIterator]() {
      const db = await withStoreFaults(ctx.dbPath, () => openReader(ctx.dbPath, runtimeOf(ctx)));
      if (!db) {
        ctx.noFile?.(false);
        return;
      }
      let it: AsyncIterator<T> | undefined;
      try {
        it = withStoreFaults(ctx.dbPath, () => fn(db)[Symbol.asyncIterator]());
        for (;;) {
          const next = await withStoreFaults(ctx.dbPath, () => it!.next());
          if (next.done) return;
          yield next.value;
        }
      } finally {
        // The statement first: a connection with a statement still stepping cannot close.
        await it?.return?.();
        db.close();
      }
    },
  };
}

/** A reader's connection to the database, or null when there is none (no file, no dcm schema). */
export async function openReader(dbPath: string, rt: ProcessRuntime): Promise<Db | null> {
  if (!isPgUrl(dbPath)) removeStaleTemps(inspectDbPath(dbPath).real, rt);
  return await openDb(dbPath, { create: false, clock: rt.clock });
}

/** A store's faults as the user's errors: a file's or a server's (store/faults.ts). */
export function withStoreFaults<T>(dbPath: string, fn: () => T): T {
  return isPgUrl(dbPath) ? withServerFaults(dbPath, fn) : withFileFaults(dbPath, fn);
}

/** One read-modify-write: BEGIN IMMEDIATE, so a concurrent writer waits instead of failing. */
export async function immediate<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  return await db.transaction(fn).immediate();
}
