/**
 * Test hooks of the orchestrator's commit path, off unless the environment asks for them. They
 * let a test put a fault exactly at every commit instead of at random moments:
 *
 *   DCM_TEST_HOOKS=1 DCM_CRASH_AFTER_COMMIT=N   SIGKILL this process right after its Nth commit
 *   DCM_TEST_HOOKS=1 DCM_BUSY_AT_COMMIT=N:S     the Nth commit finds the file held by another
 *                                               connection (a real write lock) for S seconds
 *
 * Either variable without DCM_TEST_HOOKS=1 is a usage error, so a stray export in an operator's
 * shell can never kill a real rollout.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { UsageError } from '../domain/errors.js';

const require = createRequire(import.meta.url);

export interface CommitHooks {
  beforeCommit(n: number): void;
  afterCommit(n: number): void;
}

/** The hooks the environment asks for (null: none), checked before anything is read. */
export function commitHooks(env: NodeJS.ProcessEnv, file: string): CommitHooks | null {
  const crash = env.DCM_CRASH_AFTER_COMMIT;
  const busy = env.DCM_BUSY_AT_COMMIT;
  if (crash === undefined && busy === undefined) return null;
  if (env.DCM_TEST_HOOKS !== '1') {
    const name = crash !== undefined ? 'DCM_CRASH_AFTER_COMMIT' : 'DCM_BUSY_AT_COMMIT';
    throw new UsageError(`${name} is a test hook: it needs DCM_TEST_HOOKS=1`);
  }
  const crashAt = crash === undefined ? null : positive(crash, 'DCM_CRASH_AFTER_COMMIT');
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
    afterCommit(n) {
      if (n === crashAt) process.kill(process.pid, 'SIGKILL');
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
