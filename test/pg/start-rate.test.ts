/**
 * The start rate across several workers on one strategy (a PostgreSQL store): each worker's
 * commit reads and moves the stage's last start under the store's writer lock, so the starts of
 * every worker together keep the rate in force, ramp included (domain/start-rate.ts, the
 * invariant startRateViolations), read from the history the workers wrote. And a start counted
 * where the site sees it: a run whose launcher's claim waits on the server begins late, and the
 * next start is spaced from its beginning, as the runs' own log shows.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { rampSchedule, startRateViolations } from '../../src/domain/start-rate.js';
import { parseTimestamp } from '../../src/domain/time.js';
import { waitFor } from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { everyState, query, setup, stopWorkers, worker } from '../helpers/workers.js';

let f: ExecFixture | null = null;
const holders: ChildProcess[] = [];

afterEach(() => {
  for (const p of holders.splice(0)) p.kill('SIGKILL');
  stopWorkers();
  f?.cleanup();
  f = null;
});

describe('the start rate on a server', () => {
  test('three workers together start no faster than the rate in force, ramp included', async () => {
    f = execFixture();
    const fx = f;
    setup(fx.db, 24, 24, everyState(fx, 30, 60), fx, '--start-rate', '240/min', '--ramp', '2', '--ramp-after', '6');
    const created = parseTimestamp(query<{ created_at: string }>(fx.db, 'SELECT created_at FROM strategy')[0].created_at) / 1000;
    // One of them keeps the metrics file too: its reads on a server.
    const prom = path.join(fx.dir, 'dcm.prom');
    const pool = ['host-a', 'host-b', 'host-c'].map((h, i) => worker(fx.db, { ...fx.env, DCM_HOST: h }, ...(i === 0 ? ['--metrics-textfile', prom, '--metrics-interval', '200ms'] : [])));
    const ends = await Promise.all(pool.map((w) => w.done));
    expect(ends.map((e) => e.code)).toEqual([0, 0, 0]);
    await waitFor(() => query<{ n: number }>(fx.db, 'SELECT count(*) AS n FROM apply_worker')[0].n === 0, 10_000);
    const runs = query<{ cloud: string; started_at: string }>(
      fx.db,
      `SELECT sc.name AS cloud, h.started_at FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id
       WHERE h.state = 'pre check' AND h.attempt = 1`,
    );
    expect(runs.length).toBe(24);
    const starts = runs.map((r) => ({ cloud: r.cloud, atMs: parseTimestamp(r.started_at) / 1000 }));
    const completed = query<{ finished_at: string }>(fx.db, `SELECT finished_at FROM strategy_step WHERE state = 'complete'`).map((r) => parseTimestamp(r.finished_at) / 1000);
    const schedule = rampSchedule([{ atMs: created, rate: { perMin: 240, factor: 2, after: 6 } }], completed);
    expect(startRateViolations(starts, schedule)).toEqual([]);
    // More than one worker made starts: the rate held across them, not inside one.
    const hosts = query<{ n: number }>(fx.db, `SELECT count(DISTINCT host) AS n FROM step_history WHERE state = 'pre check'`)[0].n;
    expect(Number(hosts)).toBeGreaterThanOrEqual(2);
    const text = fs.readFileSync(prom, 'utf8');
    expect(text).toMatch(/^dcm_strategy_steps\{strategy="\d+",type="patch",state="complete"\} 24$/m);
    expect(text).toMatch(/^dcm_strategy_runs_ended_total\{strategy="\d+",type="patch",outcome="ok"\} 120$/m);
    const sorted = starts.map((s) => s.atMs).sort((a, b) => a - b);
    expect(sorted[1] - sorted[0]).toBeGreaterThanOrEqual(250);
  }, 120_000);

  // The launcher claims each run on the server before it starts it (drivers/exec/launcher.ts): an
  // operator's SHARE lock on run_claim, held from psql, holds every claim (not dcm's reads). The
  // first run begins once it goes, long after its commit; the next starts, of either worker, are
  // spaced from there: the worker that made the first holds the other until it began.
  test("a run whose launcher's claim waits for another session's lock begins late: the next start, of either worker, is spaced from its beginning", async () => {
    f = execFixture();
    const fx = f;
    // States of a second: each worker's three slots fill, and the other worker starts the rest.
    setup(fx.db, 6, 6, everyState(fx, 1000, 1200), fx, '--start-rate', '120/min');
    const psql = spawn('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', fx.db], { stdio: ['pipe', 'ignore', 'pipe'] });
    holders.push(psql);
    const exited = new Promise<number | null>((resolve) => psql.on('exit', (code) => resolve(code)));
    psql.stdin!.write('SET idle_in_transaction_session_timeout = 0;\nBEGIN;\nLOCK TABLE run_claim IN SHARE MODE;\n');
    const held = () =>
      query<{ n: number }>(fx.db, `SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'run_claim' AND l.mode = 'ShareLock' AND l.granted`)[0].n > 0;
    await waitFor(() => held(), 60_000, 50);
    // Each takes at most three: both make starts.
    const pool = ['host-a', 'host-b'].map((h) => worker(fx.db, { ...fx.env, DCM_HOST: h }, '--max-local', '3'));
    // The first start is committed, and its launcher waits for the lock: held 1.5 s more.
    await waitFor(() => query<{ n: number }>(fx.db, 'SELECT count(*) AS n FROM step_history')[0].n > 0, 60_000, 20);
    await new Promise((r) => setTimeout(r, 1_500));
    psql.stdin!.end('ROLLBACK;\n');
    expect(await exited).toBe(0);
    expect((await Promise.all(pool.map((w) => w.done))).map((e) => e.code)).toEqual([0, 0]);

    const first = fx.readRuns().filter((r) => r.state === 'pre check' && r.attempt === 1);
    expect(first.length).toBe(6);
    const starts = first.map((r) => ({ cloud: r.cloud, atMs: r.start / 1e6 }));
    // The runs as their sites saw them begin keep the rate: 500 ms apart at least.
    expect(startRateViolations(starts, [{ fromMs: 0, perMin: 120 }])).toEqual([]);
    // The fault happened: the first run began well after its commit wrote its start.
    const sorted = [...starts].sort((a, b) => a.atMs - b.atMs);
    const written = query<{ started_at: string }>(
      fx.db,
      `SELECT h.started_at FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id WHERE sc.name = $1 AND h.state = 'pre check' AND h.attempt = 1`,
      [sorted[0].cloud],
    )[0].started_at;
    expect(sorted[0].atMs - parseTimestamp(written) / 1000).toBeGreaterThanOrEqual(1_000);
    // Both workers made starts: the spacing held across them.
    const hosts = query<{ n: number }>(fx.db, `SELECT count(DISTINCT host) AS n FROM step_history WHERE state = 'pre check'`)[0].n;
    expect(Number(hosts)).toBe(2);
  }, 120_000);
});
