/**
 * The server shut down under two workers for longer than a connection is tried again (5 s,
 * platform/pg-connection.ts), then started again: every session is told "terminating connection
 * due to administrator command", and every new one is refused meanwhile. A worker waits for the
 * server as for a busy store, whatever it was doing (a write, a read of the stage, a look at the
 * fleet or at the control events), and never dies of it: before, a read whose connection could not
 * be made again within the 5 s ended its worker with the server's bare words (exit 1), and one more
 * cut of a connection just made again did too (workers-loop.test.ts, once in a full run).
 * On a cluster of the test's own: the other files of the pass share theirs.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { sleep, waitFor } from '../helpers/cli.js';
import { execFixture, overlapsPerCloud, type ExecFixture } from '../helpers/exec.js';
import { everyState, query, runsPerState, setup, stepStates, stopWorkers, worker } from '../helpers/workers.js';
import { startCluster } from './global-setup.js';

let f: ExecFixture | null = null;
const passUrl = process.env.DCM_TEST_PG_URL;
let own: ReturnType<typeof startCluster> | null = null;

afterEach(() => {
  stopWorkers();
  f?.cleanup();
  f = null;
  own?.stop();
  own = null;
  process.env.DCM_TEST_PG_URL = passUrl;
});

/** Longer than the 5 s a lost connection is tried again for. */
const DOWN_MS = 8_000;
/** How long every connection is cut again and again. */
const STORM_MS = 8_000;
/** Subclouds: the rollout (5 states of 100–400 ms, window 12) lasts past the storm. */
const N = 120;

describe('the server down for longer than a connection is tried again', () => {
  test('two workers wait for it, say so, and go on: the strategy completes, each state ran once, no worker exits 1', async () => {
    own = startCluster();
    process.env.DCM_TEST_PG_URL = own.url;
    f = execFixture();
    const fx = f;
    setup(fx.db, N, 12, everyState(fx, 100, 400), fx);
    const ws = [0, 1].map((i) => worker(fx.db, { ...fx.env, DCM_HOST: `host-${i}`, DCM_DEBUG: '1' }, '--lease', '20s'));
    const completed = () => query<{ n: number }>(fx.db, `SELECT count(*)::int AS n FROM strategy_step WHERE state = 'complete'`)[0].n;
    // Mid-rollout: some subclouds done, the window full.
    await waitFor(() => completed() >= 10, 120_000, 100);
    own.down();
    await sleep(DOWN_MS);
    own.up();
    // Then every connection cut every few tens of milliseconds for a few seconds: a connection
    // made again is cut again, a read sent again on it too.
    await waitFor(() => completed() >= 25, 120_000, 100);
    for (const until = Date.now() + STORM_MS; Date.now() < until; ) {
      query(fx.db, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
      await sleep(Math.floor(Math.random() * 60));
    }
    const ends = await Promise.all(ws.map((w) => w.done));
    // No subcloud failed of it: a run's claim committed and its answer lost was taken for a
    // taker's ("given up by a worker on another host"), a read cut twice failed the run with the
    // server's words.
    expect(query(fx.db, `SELECT sc.name, st.state, st.details FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE st.state <> 'complete'`)).toEqual([]);
    // Each ends with the strategy (0). No worker's lease ran out: 20 s is longer than the server was down.
    expect(ends.map((e) => [e.code, e.code === 0 ? '' : e.stderr])).toEqual([
      [0, ''],
      [0, ''],
    ]);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: N }]);
    // Said as what it is, by each worker, never as a lock of another process.
    for (const e of ends) expect(e.stderr).toMatch(/the connection to the database server was lost/);
    const runs = fx.readRuns();
    expect(overlapsPerCloud(runs)).toEqual([]);
    expect([...runsPerState(runs).values()].every((n) => n === 1)).toBe(true);
    expect(runs.length).toBe(N * 5);
  });
});
