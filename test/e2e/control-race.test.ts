/**
 * SPEC §1's invariants (one worker per subcloud, a state started once per entry, bounded, durable
 * before visible) through pause, resume, window changes and retry, under the race test's load:
 * thousands of subclouds, a window in the hundreds, 0..1 ms latency, the real sim driver (which
 * fails a duplicate or out-of-order operation on the subcloud's side with `unexpected state`).
 */
import { describe, expect, test } from '@jest/globals';
import { statesOf } from '../../src/domain/types.js';
import { dcm, waitFor } from '../helpers/cli.js';
import { countBy, flights, history, names, okRunProblems, peakInFlight, runsByCloudState, spawnDcm, steps, strategyState, type HistoryRun, tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

const N = 5000;
const PATCH = statesOf('patch');

const temp = tempPerTest();

/** Every (cloud, state): attempts 1, 2, … in order, at most one ok and only as the last. */
function attemptProblems(runs: readonly HistoryRun[]): string[] {
  const out: string[] = [];
  for (const [key, list] of runsByCloudState(runs)) {
    list.forEach((r, i) => {
      if (r.attempt !== i + 1) out.push(`${key}: attempt ${r.attempt} at position ${i + 1}`);
      if (r.outcome === 'ok' && i !== list.length - 1) out.push(`${key}: ok run before another`);
      if (r.outcome === 'running') out.push(`${key}: still running`);
    });
  }
  return out;
}

const ends = (stderr: string) => (stderr.match(/: (complete|failed)/g) ?? []).length;

describe('the seed race cannot happen through pause, resize and retry', () => {
  test(`${N} subclouds, window 300, latency 0..1ms, 2 % failures: pause, resize while paused, resume, shrink, then retry and apply`, async () => {
    const t = temp();
    const clouds = names(N);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...clouds, '-f', 'value', '-c', 'id']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '300', '--sim-latency', '0..1ms', '--sim-fail-rate', '0.004', '--sim-seed', '11']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply', '--progress-interval', '0s']);
    await waitFor(() => ends(apply.stderr()) >= 300, 60_000, 2);
    dcmQuickOk(['--db', t.db, 'strategy', 'pause']);
    await waitFor(() => apply.stderr().includes('dcm: paused:'), 5_000, 5);
    dcmQuickOk(['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '600']);
    await waitFor(() => apply.stderr().includes('dcm: window of stage 1: 600'), 5_000, 5);
    dcmQuickOk(['--db', t.db, 'strategy', 'resume']);
    await waitFor(() => apply.stderr().includes('dcm: resumed') && ends(apply.stderr()) >= 2500, 60_000, 2);
    dcmQuickOk(['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '100']);
    const r = await apply.done;
    expect(r.stderr).not.toMatch(/unexpected state|error:/);
    expect(r.code).toBe(1);
    expect(strategyState(t.db)).toBe('failed');

    let runs = history(t.db);
    expect(runs.filter((h) => h.outcome === 'failed').every((h) => h.details === 'simulated failure')).toBe(true);
    expect(attemptProblems(runs)).toEqual([]);
    expect(peakInFlight(flights(runs).values())).toBeLessThanOrEqual(600);
    const firstFailed = steps(t.db).filter((s) => s.state === 'failed').map((s) => s.cloud);
    expect(firstFailed.length).toBeGreaterThan(10);
    const complete = clouds.filter((c) => !firstFailed.includes(c));
    expect(okRunProblems(runs, complete, PATCH)).toEqual([]);

    // Retry: the failed steps run again from the state they failed in, as the next attempt.
    dcmQuickOk(['--db', t.db, 'strategy', 'retry']);
    const again = dcm(['--db', t.db, 'strategy', 'apply', '-q']);
    expect(again.stderr).not.toMatch(/unexpected state|error:/);
    runs = history(t.db);
    expect(attemptProblems(runs)).toEqual([]);
    expect(runs.filter((h) => h.outcome === 'failed').every((h) => h.details === 'simulated failure')).toBe(true);
    const byCloud = countBy(runs.filter((h) => h.attempt > 1), (h) => h.cloud);
    expect(Object.keys(byCloud).every((c) => firstFailed.includes(c))).toBe(true);
    // Complete steps were untouched: each still has exactly one ok run per state, nothing more.
    expect(okRunProblems(runs, complete, PATCH)).toEqual([]);
    const st = steps(t.db);
    const finalCounts = countBy(st, (s) => s.state);
    expect(finalCounts.complete).toBeGreaterThan(complete.length);
    expect((finalCounts.complete ?? 0) + (finalCounts.failed ?? 0)).toBe(N);
    expect(again.code).toBe(finalCounts.failed ? 1 : 0);
  }, 180_000);
});
