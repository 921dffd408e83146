/**
 * SPEC §1: the seed race (a finished state started a second time when workers removed
 * themselves from the worker map) cannot happen. 3000 subclouds, window 1000, latency 0..2 ms,
 * several seeds, through the real sim driver, which fails a duplicate or out-of-order operation
 * with `unexpected state …` on the subcloud's side.
 */
import { describe, expect, test } from '@jest/globals';
import { statesOf } from '../../src/domain/types.js';
import { dcm} from '../helpers/cli.js';
import { countBy, flights, history, names, okRunProblems, peakInFlight, steps, strategyState, summaryPeak, tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

const N = 3000;
const WINDOW = 1000;
const SEEDS = [1, 7, 20250101];

describe('apply: the seed race cannot happen', () => {
  const temp = tempPerTest();

  test.each(SEEDS)('3000 subclouds, window 1000, latency 0..2ms, seed %i', (seed) => {
    const t = temp();
    const clouds = names(N);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...clouds, '-f', 'value', '-c', 'id']);
    dcmQuickOk([
      '--db', t.db, 'strategy', 'create', '--type', 'patch',
      '--max-parallel-subclouds', String(WINDOW), '--sim-latency', '0..2ms', '--sim-seed', String(seed),
    ]);
    const apply = dcm(['--db', t.db, 'strategy', 'apply', '-f', 'json']);
    expect(apply.stderr).not.toMatch(/unexpected state|error:/);
    expect(apply.code).toBe(0);
    expect(strategyState(t.db)).toBe('complete');

    const st = steps(t.db);
    expect(st).toHaveLength(N);
    expect(countBy(st, (s) => s.state)).toEqual({ complete: N });

    const runs = history(t.db);
    const states = statesOf('patch');
    expect(runs).toHaveLength(N * states.length);
    expect(okRunProblems(runs, clouds, states)).toEqual([]);
    expect(runs.every((r) => r.attempt === 1 && r.outcome === 'ok')).toBe(true);

    // Bounded, and the window is used: computed from the history and told by the summary line.
    const peak = peakInFlight(flights(runs).values());
    expect(peak).toBe(WINDOW);
    expect(summaryPeak(apply.stderr)).toEqual({ peak: WINDOW, window: WINDOW });
  });
});
