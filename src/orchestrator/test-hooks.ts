/**
 * Test hooks of the orchestrator's commit path, off unless the environment asks for them. They
 * let a test put a fault exactly at every commit instead of at random moments:
 *
 *   DCM_TEST_HOOKS=1 DCM_CRASH_AFTER_COMMIT=N   SIGKILL this process right after its Nth commit
 *   DCM_TEST_HOOKS=1 DCM_BUSY_AT_COMMIT=N:S     the Nth commit finds the file held by another
 *                                               connection (a real write lock) for S seconds
 *   DCM_TEST_HOOKS=1 DCM_STOP_IN_COMMIT=N       SIGSTOP this process inside its Nth commit's
 *                                               transaction (its locks held, the fence checked)
 *   DCM_TEST_HOOKS=1 DCM_STOP_AFTER_COMMIT=N    SIGSTOP this process right after its Nth commit,
 *                                               before the runs it opened are launched
 *   DCM_TEST_HOOKS=1 DCM_COUNTERS=FILE          write the apply's exact cost (commits,
 *                                               transitions, statements) to FILE as JSON
 *   DCM_TEST_HOOKS=1 DCM_TEST_CLOCK=ISO         maintenance windows are decided by a clock that
 *                                               reads ISO as the process starts and runs on
 *                                               from there (apply, strategy status)
 *
 * Either variable without DCM_TEST_HOOKS=1 is a usage error, so a stray export in an operator's
 * shell can never kill a real rollout.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { UsageError } from '../domain/errors.js';
import type { CommitHooks, CostCounters } from './runtime.js';
import { checkTestEnv } from './test-env.js';

export type { CommitHooks, CostCounters };

const require = createRequire(import.meta.url);

/** The hooks the environment asks for (null: none), checked before anything is read. */
export function commitHooks(env: NodeJS.ProcessEnv, file: string): CommitHooks | null {
  const crash = env.DCM_CRASH_AFTER_COMMIT;
  const busy = env.DCM_BUSY_AT_COMMIT;
  const stop = env.DCM_STOP_IN_COMMIT;
  const stopAfter = env.DCM_STOP_AFTER_COMMIT;
  checkTestEnv(env);
  if (crash === undefined && busy === undefined && stop === undefined && stopAfter === undefined) return null;
  const crashAt = crash === undefined ? null : positive(crash, 'DCM_CRASH_AFTER_COMMIT');
  const stopAt = stop === undefined ? null : positive(stop, 'DCM_STOP_IN_COMMIT');
  const stopAfterAt = stopAfter === undefined ? null : positive(stopAfter, 'DCM_STOP_AFTER_COMMIT');
  let busyAt: number | null = null;
  let busyMs = 0;
  if (busy !== undefined) {
    const m = /^(\d+):(\d+(?:\.\d+)?)$/.exec(busy);
    if (!m || Number(m[1]) < 1) throw new UsageError(`invalid DCM_BUSY_AT_COMMIT '${busy}': give N:SECONDS, e.g. 5:3`);
    busyAt = Number(m[1]);
    busyMs = Number(m[2]) * 1000;
  }
  return {
    beforeCommit(n) {
      if (n === busyAt) holdWriteLock(file, busyMs);
    },
    inCommit(n) {
      if (n === stopAt) process.kill(process.pid, 'SIGSTOP');
    },
    afterCommit(n) {
      if (n === crashAt) process.kill(process.pid, 'SIGKILL');
      if (n === stopAfterAt) process.kill(process.pid, 'SIGSTOP');
    },
  };
}

function positive(text: string, name: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new UsageError(`invalid ${name} '${text}': give a commit number, 1 or more`);
  return Number(text);
}

/**
 * Another connection takes the file's write lock (`BEGIN IMMEDIATE`) and holds it for `ms`. It
 * runs on a thread of its own so that it lets go while this thread waits in SQLite's busy
 * handler; this returns once the lock is held.
 */
function holdWriteLock(file: string, ms: number): void {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { workerData } = require('node:worker_threads');
     const Database = require(workerData.sqlite);
     const db = new Database(workerData.file);
     db.pragma('busy_timeout = 10000');
     db.exec('BEGIN IMMEDIATE');
     Atomics.store(workerData.flag, 0, 1);
     Atomics.notify(workerData.flag, 0);
     setTimeout(() => { db.exec('COMMIT'); db.close(); }, workerData.ms);`,
    { eval: true, workerData: { file, ms, flag, sqlite: require.resolve('better-sqlite3') } },
  );
  worker.unref();
  Atomics.wait(flag, 0, 0, 15_000);
}

type TxFn = ((...a: unknown[]) => unknown) & Record<'deferred' | 'immediate' | 'alongside', (...a: unknown[]) => unknown>;

/** The part of a connection the counters wrap: its own statements, and its transactions'. */
interface Counted {
  prepare: (...a: never[]) => unknown;
  pragma: (...a: never[]) => unknown;
  atCommit: (...a: never[]) => unknown;
  commitCount: () => unknown;
  transaction: (...a: never[]) => unknown;
  readonly inside: Pick<Counted, 'prepare' | 'pragma' | 'atCommit'>;
}

/**
 * Counters for this apply, or null when not asked for. Statements and commits are counted by
 * wrapping the connection's `prepare` and `transaction`, and the `prepare` of its transactions'
 * handle (only then: no cost otherwise); transitions by the committer.
 */
export function costCounters(env: NodeJS.ProcessEnv, db: Counted): { counters: CostCounters; file: string } | null {
  const file = env.DCM_COUNTERS;
  // Refused without DCM_TEST_HOOKS=1 by commitHooks, before the file is read.
  if (file === undefined || env.DCM_TEST_HOOKS !== '1') return null;
  const counters: CostCounters = { commits: 0, transitions: 0, statements: 0, details: 0, autocommitReads: 0 };
  // A statement through the connection is a transaction of its own (a write, a commit); one
  // through the transactions' handle is part of theirs.
  const countStatements = (on: Pick<Counted, 'prepare' | 'pragma' | 'atCommit'>, alone: boolean) => {
    const prepare = on.prepare.bind(on) as (...a: unknown[]) => Record<string, unknown>;
    (on as { prepare: unknown }).prepare = (...args: unknown[]) => {
      const stmt = prepare(...args);
      for (const m of ['run', 'get', 'all', 'iterate']) {
        const f = stmt[m] as ((...a: unknown[]) => unknown) | undefined;
        if (typeof f !== 'function') continue;
        stmt[m] = (...a: unknown[]) => {
          counters.statements++;
          if (alone) {
            if (m === 'run') counters.commits++;
            else counters.autocommitReads++;
          }
          return f.apply(stmt, a);
        };
      }
      return stmt;
    };
    const pragma = on.pragma.bind(on) as (...a: unknown[]) => unknown;
    (on as { pragma: unknown }).pragma = (...args: unknown[]) => {
      counters.statements++;
      return pragma(...args);
    };
    // A statement due by the commit is one statement still (sent with the COMMIT on a server).
    const atCommit = on.atCommit.bind(on) as (...a: unknown[]) => unknown;
    (on as { atCommit: unknown }).atCommit = (...args: unknown[]) => {
      counters.statements++;
      if (alone) counters.commits++;
      return atCommit(...args);
    };
  };
  countStatements(db, true);
  countStatements(db.inside, false);
  // A commit count is a read of its own (SQLite's data_version), as a pragma is a statement.
  const commitCount = db.commitCount.bind(db) as () => unknown;
  (db as { commitCount: unknown }).commitCount = () => {
    counters.statements++;
    counters.autocommitReads++;
    return commitCount();
  };
  // A write transaction of the connection commits when its function returns (one through the
  // handle is a savepoint). Deferred ones are the connection's reads (one snapshot), not commits.
  const transaction = db.transaction.bind(db) as (fn: unknown) => TxFn;
  (db as { transaction: unknown }).transaction = (fn: unknown) => {
    const tx = transaction(fn);
    const counted = (f: (...a: unknown[]) => unknown) => async (...a: unknown[]) => {
      const out = await f(...a);
      counters.commits++;
      return out;
    };
    // dcm's writes are all immediate (SPEC §2: every read-modify-write is BEGIN IMMEDIATE), or
    // alongside one another on a server (a worker's batches), which is BEGIN IMMEDIATE on a file.
    return Object.assign((...a: unknown[]) => tx(...a), { deferred: tx.deferred, immediate: counted(tx.immediate), alongside: counted(tx.alongside) });
  };
  return { counters, file };
}
