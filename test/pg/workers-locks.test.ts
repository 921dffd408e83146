/**
 * Another session's locks (README "Several hosts"): an operator's `LOCK TABLE` held from psql in an
 * open transaction blocks dcm's reads as well as its writes (ACCESS EXCLUSIVE), where dcm's own
 * writers' lock blocks only writers (test/pg/workers-hosts.test.ts). A worker that joins meanwhile
 * waits, says so once and goes on when the lock goes; a worker applying waits too, and a second
 * Ctrl-C ends it with exit 130 (never a lost connection, which it was not), the strategy left
 * applying for the next apply. A lock that keeps every lease from being renewed takes nobody over.
 * Real processes throughout: psql, the workers, the runs' own log.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from '../helpers/cli.js';
import { execFixture, overlapsPerCloud, type ExecFixture } from '../helpers/exec.js';
import { everyState, query, runsPerState, runsWithPid, setup, stepStates, stopWorkers, worker } from '../helpers/workers.js';

let f: ExecFixture | null = null;
const holders: ChildProcess[] = [];

afterEach(() => {
  for (const p of holders.splice(0)) p.kill('SIGKILL');
  stopWorkers();
  f?.cleanup();
  f = null;
});

/**
 * `LOCK TABLE <table> IN ACCESS EXCLUSIVE MODE` in an open transaction of a psql process, as an
 * operator would hold it; resolves once the server has granted it. `release` rolls it back and
 * waits for psql to exit.
 */
async function lockFromPsql(db: string, table: string): Promise<{ release: () => Promise<number | null> }> {
  const psql = spawn('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', db], { stdio: ['pipe', 'ignore', 'pipe'] });
  holders.push(psql);
  let stderr = '';
  psql.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => psql.on('exit', (code) => resolve(code)));
  psql.stdin!.write(`SET idle_in_transaction_session_timeout = 0;\nBEGIN;\nLOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE;\n`);
  const granted = () =>
    query<{ n: number }>(
      db,
      `SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = $1 AND l.mode = 'AccessExclusiveLock' AND l.granted`,
      [table],
    )[0].n > 0;
  await waitFor(() => {
    if (psql.exitCode !== null) throw new Error(`psql exited ${psql.exitCode}: ${stderr}`);
    return granted();
  }, 60_000, 50);
  return {
    release: () => {
      psql.stdin!.end('ROLLBACK;\n');
      return exited;
    },
  };
}

const JOIN_WAIT = 'dcm: the database is locked by another process: waiting for it to join the workers\n';
const count = (text: string, line: string) => text.split(line).length - 1;

describe("another session's LOCK TABLE, held from psql", () => {
  // The strategy's steps, which a worker reads to join and writes to go on; the strategy's row,
  // which a worker reads first of all (it died of that read's lock timeout); the workers' leases,
  // which no worker can renew meanwhile (the one joining took the other over as it joined).
  test.each(['strategy_step', 'strategy', 'apply_worker'])('LOCK TABLE %s: a worker joining meanwhile waits, says so once, and goes on when the lock goes; the one applying waits too', async (table) => {
    f = execFixture();
    const fx = f;
    setup(fx.db, 12, 3, everyState(fx, 200, 400), fx);
    const a = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' }, '--progress-interval', '0s');
    await waitFor(() => fx.readRuns().length >= 2, 60_000);
    const lock = await lockFromPsql(fx.db, table);
    const lockedAt = Date.now();
    const b = worker(fx.db, { ...fx.env, DCM_HOST: 'host-b' }, '--progress-interval', '0s');
    await waitFor(() => b.stderr().includes(JOIN_WAIT), 60_000, 50);
    // The worker applying meets the lock (its next commit, or its next look at the strategy), and waits for it as well.
    await waitFor(() => a.stderr().includes('dcm: the database is locked by another process: waiting for it (nothing is lost meanwhile)\n'), 60_000, 50);
    // Both still there, and host-b not joined: its join (recorded with its start) waits behind the lock.
    expect([a.child.exitCode, b.child.exitCode]).toEqual([null, null]);
    expect(query(fx.db, `SELECT 1 FROM strategy_event WHERE event = 'apply started' AND host = 'host-b'`)).toEqual([]);
    // Held past four leases (2 s), as a long migration would: no lease is renewed meanwhile when
    // the lock is the leases' own table, and nobody may be taken for gone for it (asserted below).
    await waitFor(() => Date.now() - lockedAt >= 8_000, 60_000, 100);
    expect(await lock.release()).toBe(0);
    const [endA, endB] = await Promise.all([a.done, b.done]);
    expect([endA.code, endB.code]).toEqual([0, 0]);
    expect(count(endB.stderr, JOIN_WAIT)).toBe(1);
    // A lock is never said to be a lost connection, and nobody died of a lock timeout.
    for (const end of [endA, endB]) expect(end.stderr).not.toMatch(/was lost|lock timeout|^error:/m);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 12 }]);
    // Nobody was taken for gone for the lock's sake.
    expect(query(fx.db, `SELECT details FROM strategy_event WHERE event = 'worker taken over'`)).toEqual([]);
    // By the runs' own log: every state of every site ran once, and none overlapped another of its site.
    const runs = fx.readRuns();
    expect(runs).toHaveLength(12 * 5);
    expect([...runsPerState(runs)].filter(([, n]) => n !== 1)).toEqual([]);
    expect(overlapsPerCloud(runs)).toEqual([]);
  }, 180_000);

  test('a worker mid-apply meets the lock: a first Ctrl-C, then a second, exit 130 with the strategy still applying; the next apply ends it', async () => {
    f = execFixture();
    const fx = f;
    // Runs long enough to be in flight when the lock comes, and when the Ctrl-Cs do.
    setup(fx.db, 6, 3, everyState(fx, 1_500, 2_500), fx);
    const a = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' }, '--progress-interval', '0s');
    await waitFor(() => runsWithPid(fx.db) >= 1, 60_000, 50);
    const lock = await lockFromPsql(fx.db, 'strategy_step');
    try {
      // A run ends, and its commit waits for the lock.
      await waitFor(() => a.stderr().includes('dcm: the database is locked by another process: waiting for it (nothing is lost meanwhile)\n'), 60_000, 50);
      a.child.kill('SIGINT');
      await waitFor(() => /SIGINT: starting nothing new/.test(a.stderr()), 30_000, 50);
      a.child.kill('SIGINT');
      // The second Ctrl-C bounds every wait for the store: dcm exits while the lock is still held.
      const end = await a.done;
      expect(end.code).toBe(130);
      const lines = end.stderr.trim().split('\n');
      expect(lines.at(-1)).toBe('error: the database stayed locked by another process: the end of this apply was not written; `dcm strategy apply` resumes');
      expect(end.stderr).not.toMatch(/was lost|lock timeout/);
    } finally {
      expect(await lock.release()).toBe(0);
    }
    expect(query(fx.db, 'SELECT state FROM strategy')).toEqual([{ state: 'applying' }]);
    // What the second Ctrl-C left is what a kill leaves: the next apply takes it up and ends the strategy.
    const again = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' });
    const end = await again.done;
    expect([end.code, end.stderr]).toEqual([0, '']);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 6 }]);
    const runs = fx.readRuns();
    expect(overlapsPerCloud(runs)).toEqual([]);
    // Every state of every site ended ok once (runs cut by the stop were killed before their end).
    expect([...runsPerState(runs)].filter(([, n]) => n !== 1)).toEqual([]);
    expect(runs).toHaveLength(6 * 5);
  }, 180_000);
});
