/**
 * Opening the dcm file (SPEC §2): path resolution, refusal of foreign or newer files before
 * anything is written, pragmas, forward migrations.
 */
import fs from 'node:fs';
import path from 'node:path';
import type DatabaseT from 'better-sqlite3';
import { requireCjs } from '../platform/cjs.js';

// Through require: see platform/cjs.ts.
const Database = requireCjs('better-sqlite3') as typeof DatabaseT;
import { OperationError } from '../domain/errors.js';
import { fileFault, withFileFaults } from './faults.js';
import { refuseOrphanWal } from './leftovers.js';
import { canWriteIn, inspectDbPath, type DbPath } from './path.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
import { isPgUrl } from '../domain/db-url.js';

export type { Db } from '../platform/db.js';
import type { Db } from '../platform/db.js';
import { SqliteDb } from '../platform/sqlite-db.js';
import { REAL_CLOCK, type Clock } from '../platform/clock.js';

type Raw = DatabaseT.Database;

export { resolveDbPath } from './path.js';

const SQLITE_MAGIC = 'SQLite format 3\0';

/**
 * Refuse what is not a file we may open, without touching it (see path.ts). Returns false for a
 * missing file when `mustExist` (a reader's "nothing there"); a writer that would create the file
 * is refused when a removed database's WAL is still there, or when the directory is read-only.
 */
export function checkDbPath(file: string, mustExist: boolean): boolean {
  return checkPath(file, mustExist) !== null;
}

function checkPath(file: string, mustExist: boolean, write = !mustExist): DbPath | null {
  const p = inspectDbPath(file);
  const dir = path.dirname(p.real);
  if (!p.exists) {
    if (mustExist) return null;
    refuseOrphanWal(p.real, file);
    if (!canWriteIn(dir)) throw new OperationError(`cannot write in ${path.dirname(file)} (read-only)`);
    return p;
  }
  if (write && !canWriteIn(dir)) throw new OperationError(`cannot write in ${path.dirname(file)} (read-only)`);
  const st = fs.statSync(p.real);
  if (st.size > 0) {
    const head = Buffer.alloc(16);
    withFileFaults(file, () => {
      const fd = fs.openSync(p.real, 'r');
      try {
        fs.readSync(fd, head, 0, 16, 0);
      } finally {
        fs.closeSync(fd);
      }
    });
    if (head.toString('latin1') !== SQLITE_MAGIC) {
      throw new OperationError(`${file} is not a dcm database (not an SQLite file)`);
    }
  }
  return p;
}

export interface OpenOptions {
  /** Write commands create the file and schema; read commands get null for a missing file. */
  create: boolean;
  /**
   * The caller writes to a file that must exist (apply, abort, delete): refused in a directory it
   * cannot write in, as a creating writer is, instead of failing later in SQLite with no path.
   */
  write?: boolean;
  /** The clock of the process that opens it (its runtime's, platform/runtime.ts): the times it writes. This process's by default. */
  clock?: Clock;
}

let openPg: ((url: string, opts: { create: boolean; clock: Clock }) => Promise<Db | null>) | null = null;

/**
 * The PostgreSQL backend (store/pg/), loaded only for a database on a server: its modules would
 * otherwise be part of every command's start-up. The CLI loads it before it runs a command there.
 */
export async function loadPgBackend(): Promise<void> {
  const { openPgDb } = await import('./pg/open.js');
  openPg = (url, opts) => openPgDb(url, opts);
}

/**
 * Open the file, or return null when it is missing and `create` is false. A PostgreSQL address
 * opens that database instead (store/pg/open.ts, once loadPgBackend has loaded it), with the same face.
 */
export async function openDb(file: string, opts: OpenOptions): Promise<Db | null> {
  if (isPgUrl(file)) {
    if (!openPg) throw new Error('the PostgreSQL backend is not loaded (store/open.ts: loadPgBackend)');
    return await openPg(file, { create: opts.create, clock: opts.clock ?? REAL_CLOCK });
  }
  const p = checkPath(file, !opts.create, opts.create || opts.write === true);
  if (!p) return null;
  let db: Raw;
  try {
    // The real path: SQLite keeps -wal and -shm beside the file it opens.
    const image = opts.create || opts.write ? null : readerSnapshot(p.real);
    db = image ? new Database(image) : new Database(p.real, { fileMustExist: !opts.create });
  } catch (err) {
    throw fileFault(err, file) ?? new OperationError(`cannot open database ${file}: ${(err as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 10000');
    const version = db.pragma('user_version', { simple: true }) as number;
    const appId = db.pragma('application_id', { simple: true }) as number;
    const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number };
    if (appId !== APPLICATION_ID && (appId !== 0 || tables.n > 0 || version !== 0)) {
      throw new OperationError(`${file} is not a dcm database`);
    }
    if (!opts.create && version === 0 && tables.n === 0) {
      // An empty file (`touch dcm.db`) holds nothing to read; a reader does not write the schema.
      db.close();
      return null;
    }
    if (version > SCHEMA_VERSION) {
      throw new OperationError(
        `${file} was written by a newer dcm (schema version ${version}; this dcm knows up to ${SCHEMA_VERSION})`,
      );
    }
    if (!db.memory && db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
    // WAL + NORMAL: a commit survives the death of the process (kill -9); only a power loss may
    // roll back the last transactions, never corrupt the file.
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    const clock = opts.clock ?? REAL_CLOCK;
    if (version < SCHEMA_VERSION) migrate(db, version, clock);
    const out = new SqliteDb(db);
    out.clock = clock;
    return out;
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_NOTADB') {
      throw new OperationError(`${file} is not a dcm database`);
    }
    throw fileFault(err, file) ?? err;
  }
}

function migrate(db: Raw, from: number, clock: Clock): void {
  db.transaction(() => {
    // Re-read inside the write lock: another process may have migrated meanwhile.
    const now = db.pragma('user_version', { simple: true }) as number;
    for (let v = Math.max(from, now); v < SCHEMA_VERSION; v++) MIGRATIONS[v](db, clock);
    db.pragma(`application_id = ${APPLICATION_ID}`);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

/**
 * A reader in a directory it cannot write in, with no -wal beside the file: SQLite could not make
 * its shared-memory file and would refuse to read. With no WAL the file holds every commit, and no
 * writer can start one there either (it could not create the WAL), so a copy in memory is exact.
 * (With a -wal and -shm present, SQLite reads them read-only itself.) The header's WAL mark is
 * cleared in the copy: an in-memory database cannot be in WAL mode.
 */
export function readerSnapshot(real: string): Buffer | null {
  if (canWriteIn(path.dirname(real)) || fs.existsSync(`${real}-wal`)) return null;
  const image = fs.readFileSync(real);
  if (image.length >= 20 && image[18] === 2 && image[19] === 2) image[18] = image[19] = 1;
  return image;
}

/**
 * How long one statement waits for another writer before it fails busy (SPEC §2: at least 5 s
 * while applying). After a second Ctrl-C the apply's last writes wait a short while each, so that
 * their bound (orchestrator/commit-loop.ts) is the whole wait, not one statement's.
 */
export async function setBusyWait(db: Db, ms: number): Promise<void> {
  await db.busyWait(ms);
}
