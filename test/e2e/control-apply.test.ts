/**
 * Control while applying (SPEC §4), against a running `apply` from another shell, proven from the
 * history: pause and resume, Ctrl-C while paused, abort while paused, the window changed both
 * ways, the failure budget.
 */
import { describe, expect, test } from '@jest/globals';
import { statesOf } from '../../src/domain/types.js';
import { dcm, sleep, waitFor, type RunResult } from '../helpers/cli.js';
import { json } from '../helpers/fleet.js';
import { run as inProcess } from '../helpers/inprocess.js';
import {
  countBy,
  createFleet,
  flights,
  history,
  micros,
  names,
  okRunProblems,
  spawnDcm,
  steps,
  strategyState,
  type Flight,
  tempPerTest,
} from '../helpers/history.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const PATCH = statesOf('patch');

const temp = tempPerTest();

const fresh = (): string => temp().db;

/**
 * The pauses and window updates that must land while the fleet still runs go through the CLI in
 * this process (its parse, command and output, without a node start): on a busy machine a spawned
 * one could land after the apply had run through the fleet, leaving nothing to judge them by.
 */
async function okHere(args: string[]): Promise<RunResult> {
  const r = await inProcess(args);
  if (r.code !== 0) throw new Error(`dcm ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r;
}

const status = (db: string) => json<Record<string, unknown>>(dcmQuickOk(['--db', db, 'strategy', 'status', '-f', 'json']));
const completes = (stderr: string) => (stderr.match(/-> complete/g) ?? []).length;

/** Subclouds in flight at `t` (µs): started at or before it, not yet ended. */
function inFlightAt(fl: readonly Flight[], t: number): number {
  let n = 0;
  for (const f of fl) if (f.start <= t && t < f.end) n++;
  return n;
}

describe('pause and resume from another shell', () => {
  test('no subcloud starts once the pause is noticed, in flight finish, status shows paused; resume goes on to complete', async () => {
    const db = fresh();
    const clouds = names(120);
    createFleet(db, clouds, ['--max-parallel-subclouds', '8', '--sim-latency', '20ms..50ms']);
    const apply = spawnDcm(['--db', db, 'strategy', 'apply', '-v']);
    await waitFor(() => completes(apply.stderr()) >= 10, 30_000, 5);

    const paused = json<{ state: string; updated_at: string }>(await okHere(['--db', db, 'strategy', 'pause', '-f', 'json']));
    expect(paused.state).toBe('paused');
    // How soon it is noticed is the bench's figure 8-pause, not bounded here.
    await waitFor(() => apply.stderr().includes('dcm: paused: no new subcloud starts'), 60_000, 5);
    const noticed = Date.now() * 1000;

    // In flight run to their end; none starts after the pause (below, and exactly at the pause's
    // commit in stop-exact.test.ts).
    await waitFor(() => status(db)['in flight'] === 0, 60_000, 20);
    const st = status(db);
    expect(st.state).toBe('paused');
    expect(st.initial as number).toBeGreaterThan(0);
    const fl = [...flights(history(db)).values()];
    for (const f of fl) {
      expect(f.start).toBeLessThan(noticed);
      expect(Number.isFinite(f.end)).toBe(true);
    }
    // Some subclouds were in flight when the pause was committed and ran on to their end after it
    // (the commit's time, not this test's sight of the notice: on a busy machine the test may look
    // only after every run that was in flight has ended).
    const pausedAt = Date.parse(paused.updated_at) * 1000;
    expect(fl.some((f) => f.start < pausedAt && f.end > pausedAt)).toBe(true);
    expect(apply.child.exitCode).toBeNull();

    expect(json<{ state: string }>(dcmQuickOk(['--db', db, 'strategy', 'resume', '-f', 'json'])).state).toBe('applying');
    const r = await apply.done;
    expect(r.stderr).toMatch(/dcm: resumed/);
    expect(r.code).toBe(0);
    expect(strategyState(db)).toBe('complete');
    const runs = history(db);
    expect(okRunProblems(runs, clouds, PATCH)).toEqual([]);
    expect(runs.every((h) => h.attempt === 1)).toBe(true);
    // Resumed: subclouds held back by the pause started after it, none was skipped.
    expect(countBy(steps(db), (s) => s.state)).toEqual({ complete: 120 });
  });

  test('Ctrl-C while paused exits 130 and the strategy stays paused; a new apply waits paused; abort while paused ends aborted', async () => {
    const db = fresh();
    createFleet(db, names(60), ['--max-parallel-subclouds', '4', '--sim-latency', '20ms..40ms']);
    const first = spawnDcm(['--db', db, 'strategy', 'apply', '-v']);
    await waitFor(() => completes(first.stderr()) >= 4, 30_000, 5);
    await okHere(['--db', db, 'strategy', 'pause']);
    await waitFor(() => first.stderr().includes('dcm: paused:'), 60_000, 5);
    await waitFor(() => status(db)['in flight'] === 0, 60_000, 20);
    first.child.kill('SIGINT');
    const r1 = await first.done;
    expect(r1.code).toBe(130);
    expect(r1.stderr).toMatch(/the strategy stays paused/);
    expect(strategyState(db)).toBe('paused');
    expect(status(db).orchestrator).toBeNull();
    expect(dcmQuick(['--db', db, 'strategy', 'delete', '--yes']).stderr).toBe('error: Strategy in state paused cannot be deleted\n');

    const before = history(db).length;
    const second = spawnDcm(['--db', db, 'strategy', 'apply', '-v']);
    await waitFor(() => second.stderr().includes('dcm: paused: no new subcloud starts'), 60_000, 5);
    await sleep(700);
    expect(history(db).length).toBe(before);
    expect(strategyState(db)).toBe('paused');

    const abort = json<{ state: string }>(dcmQuickOk(['--db', db, 'strategy', 'abort', '-f', 'json']));
    expect(abort.state).toBe('abort requested');
    const r2 = await second.done;
    expect(r2.code).toBe(3);
    expect(strategyState(db)).toBe('aborted');
    const counts = countBy(steps(db), (s) => s.state);
    expect(Object.keys(counts).sort()).toEqual(['aborted', 'complete']);
    expect(history(db).length).toBe(before);
  });

  test('abort of a paused strategy with no orchestrator: steps not started are aborted, the strategy ends aborted', async () => {
    const db = fresh();
    createFleet(db, names(30), ['--max-parallel-subclouds', '3', '--sim-latency', '20ms..40ms']);
    const apply = spawnDcm(['--db', db, 'strategy', 'apply', '-v']);
    await waitFor(() => completes(apply.stderr()) >= 3, 30_000, 5);
    await okHere(['--db', db, 'strategy', 'pause']);
    await waitFor(() => apply.stderr().includes('dcm: paused:'), 60_000, 5);
    await waitFor(() => status(db)['in flight'] === 0, 60_000, 20);
    apply.child.kill('SIGTERM');
    expect((await apply.done).code).toBe(143);
    expect(json<{ state: string }>(dcmQuickOk(['--db', db, 'strategy', 'abort', '-f', 'json'])).state).toBe('aborted');
    const counts = countBy(steps(db), (s) => s.state);
    expect(Object.keys(counts).sort()).toEqual(['aborted', 'complete']);
    expect(dcm(['--db', db, 'strategy', 'apply']).stderr).toBe('error: Strategy in state aborted cannot be applied\n');
  });
});

describe('strategy update while applying', () => {
  test('the window changed both ways: reaches a larger one; once a smaller one is noticed, no start finds more than it in flight', async () => {
    const db = fresh();
    const clouds = names(400);
    createFleet(db, clouds, ['--max-parallel-subclouds', '4', '--sim-latency', '15ms..30ms']);
    const apply = spawnDcm(['--db', db, 'strategy', 'apply', '-v']);
    await waitFor(() => completes(apply.stderr()) >= 8, 30_000, 5);

    await okHere(['--db', db, 'strategy', 'update', '--max-parallel-subclouds', '24']);
    await waitFor(() => apply.stderr().includes('dcm: window of stage 1: 24'), 60_000, 5);
    const grown = Date.now() * 1000;
    await waitFor(() => completes(apply.stderr()) >= 150, 60_000, 5);

    await okHere(['--db', db, 'strategy', 'update', '--max-parallel-subclouds', '3', '--stage', '1']);
    await waitFor(() => apply.stderr().includes('dcm: window of stage 1: 3'), 60_000, 5);
    const shrunk = Date.now() * 1000;
    const r = await apply.done;
    expect(r.code).toBe(0);

    const runs = history(db);
    expect(okRunProblems(runs, clouds, PATCH)).toEqual([]);
    const fl = [...flights(runs).values()];
    // Before the change: never above 4. After the larger window was noticed: it is reached.
    for (const f of fl) if (f.start < grown - 1_000_000) expect(inFlightAt(fl, f.start)).toBeLessThanOrEqual(4);
    const afterGrow = fl.filter((f) => f.start > grown && f.start < shrunk);
    expect(Math.max(...afterGrow.map((f) => inFlightAt(fl, f.start)))).toBe(24);
    for (const f of afterGrow) expect(inFlightAt(fl, f.start)).toBeLessThanOrEqual(24);
    // After the smaller one was noticed: a start never finds more than 3 in flight (itself included).
    const afterShrink = fl.filter((f) => f.start > shrunk);
    expect(afterShrink.length).toBeGreaterThan(10);
    for (const f of afterShrink) expect(inFlightAt(fl, f.start)).toBeLessThanOrEqual(3);
  });
});

describe('--max-failures', () => {
  test.each([
    ['3', 60, ['s5', 's10', 's15', 's30', 's45'], 3],
    ['5%', 100, ['s5', 's15', 's25', 's35', 's45', 's55', 's65'], 5],
  ])('--max-failures %s: no new subcloud starts once the budget is spent, in flight finish, the strategy ends failed', (budget, n, failing, limit) => {
    const db = fresh();
    const clouds = names(n);
    createFleet(db, clouds, [
      '--max-parallel-subclouds', '3', '--sim-latency', '5ms..15ms', '--max-failures', budget,
      ...failing.flatMap((c) => ['--sim-fail', `${c}=pre check`]),
    ]);
    const r = dcm(['--db', db, 'strategy', 'apply']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`failed: ${limit} step(s) failed (--max-failures ${budget}), no new subcloud will start`);
    expect(strategyState(db)).toBe('failed');
    const st = steps(db);
    const counts = countBy(st, (s) => s.state);
    expect(counts.failed).toBe(limit);
    expect(counts.initial).toBeGreaterThan(0);
    const runs = history(db);
    const spent = Math.min(...runs.filter((h) => h.outcome === 'failed').map((h) => micros(h.finished_at!)).sort((a, b) => a - b).slice(limit - 1, limit));
    for (const f of flights(runs).values()) expect(f.start).toBeLessThan(spent);
    // Those that started ran to their end.
    expect(st.every((s) => ['complete', 'failed', 'initial'].includes(s.state))).toBe(true);
    expect(status(db)['max failures']).toBe(budget.endsWith('%') ? `${budget} (${limit} of ${n} steps)` : budget);
  });
});
