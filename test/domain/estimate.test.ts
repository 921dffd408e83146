import { describe, expect, test } from '@jest/globals';
import {
  DurationTally,
  emptyStat,
  addSample,
  estimateRemainingMs,
  estimateStageMs,
  estimateWindowedStageMs,
  expectedMaxZ,
  meanMs,
  simLatencyMidpoint,
  stateMeans,
  stdDevMs,
} from '../../src/domain/estimate.js';

const stat = (...ms: number[]) => {
  const s = emptyStat();
  for (const v of ms) addSample(s, v);
  return s;
};

describe('duration statistics', () => {
  test('mean, spread, min and max of samples', () => {
    const s = stat(100, 200, 300);
    expect(meanMs(s)).toBe(200);
    expect(stdDevMs(s)).toBeCloseTo(81.65, 1);
    expect([s.count, s.minMs, s.maxMs]).toEqual([3, 100, 300]);
  });

  test('a tally groups samples by state', () => {
    const t = new DurationTally();
    t.add('a', 10);
    t.add('b', 20);
    t.add('a', 30);
    expect(t.size).toBe(2);
    expect(meanMs(t.byState.get('a')!)).toBe(20);
  });
});

describe('stateMeans', () => {
  const states = ['s1', 's2', 's3'];
  test('observed first, then history, then the fallback; the weakest source is named', () => {
    const observed = new Map([['s1', stat(100)]]);
    const history = new Map([['s1', stat(999)], ['s2', stat(200)]]);
    expect(stateMeans(states, { observed, history, fallbackMs: 50 })).toMatchObject({ means: [100, 200, 50], source: 'sim' });
    expect(stateMeans(states, { observed, history: new Map([['s2', stat(2)], ['s3', stat(3)]]) })).toMatchObject({
      means: [100, 2, 3],
      source: 'history',
    });
    expect(stateMeans(['s1'], { observed })).toEqual({ means: [100], source: 'observed', sds: [0] });
  });

  test('unknown when a state has nothing to go on', () => {
    expect(stateMeans(states, { observed: new Map([['s1', stat(1)]]) })).toEqual({ means: null, source: 'unknown', sds: null });
    expect(stateMeans(states, { fallbackMs: null })).toEqual({ means: null, source: 'unknown', sds: null });
  });
});

describe('estimateStageMs', () => {
  const means = [100, 200, 300]; // 600 ms a subcloud

  test('a stage not started: ceil(n / window) waves of the per-subcloud total', () => {
    expect(estimateStageMs(means, { window: 10, notStarted: 25, inFlight: [] })).toBe(1800);
    expect(estimateStageMs(means, { window: 1, notStarted: 3, inFlight: [] })).toBe(1800);
    expect(estimateStageMs(means, { window: 100, notStarted: 3, inFlight: [] })).toBe(600);
    expect(estimateStageMs(means, { window: 3, notStarted: 0, inFlight: [] })).toBe(0);
  });

  test('in-flight subclouds free their slots after what is left of them', () => {
    // One in its last state for 250 ms of 300: 50 left. One just started: 600 left.
    const inFlight = [
      { stateIndex: 2, elapsedMs: 250 },
      { stateIndex: 0, elapsedMs: 0 },
    ];
    expect(estimateStageMs(means, { window: 2, notStarted: 0, inFlight })).toBe(600);
    // A third subcloud takes the slot freed at 50 ms and ends at 650.
    expect(estimateStageMs(means, { window: 2, notStarted: 1, inFlight })).toBe(650);
    // A state running longer than its mean is taken as about to end, never negative.
    expect(estimateStageMs(means, { window: 1, notStarted: 0, inFlight: [{ stateIndex: 2, elapsedMs: 5000 }] })).toBe(0);
  });

  test('a window made smaller than what is in flight starts nothing until below it', () => {
    const inFlight = [0, 10, 20].map((e) => ({ stateIndex: 2, elapsedMs: 300 - e })); // end at 0, 10, 20
    // Window 2: the next starts when fewer than 2 are in flight, at 10 ms; window 1: at 20 ms.
    expect(estimateStageMs(means, { window: 2, notStarted: 1, inFlight })).toBe(610);
    expect(estimateStageMs(means, { window: 1, notStarted: 1, inFlight })).toBe(620);
  });

  test('stages add up; a larger window never estimates longer', () => {
    const stages = [
      { window: 5, notStarted: 5, inFlight: [] },
      { window: 50, notStarted: 1000, inFlight: [] },
    ];
    expect(estimateRemainingMs(means, stages)).toBe(600 + 20 * 600);
    let last = Infinity;
    for (const w of [1, 2, 7, 30, 100, 1000]) {
      const ms = estimateStageMs(means, { window: w, notStarted: 500, inFlight: [{ stateIndex: 1, elapsedMs: 50 }] });
      expect(ms).toBeLessThanOrEqual(last);
      last = ms;
    }
  });
});

describe('the slowest subcloud of a stage', () => {
  test('expected largest of k standard normals', () => {
    expect(expectedMaxZ(1)).toBe(0);
    expect(expectedMaxZ(2)).toBeCloseTo(0.56, 1);
    expect(expectedMaxZ(10)).toBeCloseTo(1.54, 1);
    expect(expectedMaxZ(100)).toBeCloseTo(2.51, 1);
  });

  test('with spreads, a stage ends later than its mean schedule, by the spread of the last wave', () => {
    const means = [100, 100];
    const sds = [30, 40]; // total spread 50
    const stage = { window: 10, notStarted: 25, inFlight: [] };
    expect(estimateStageMs(means, stage, sds)).toBeCloseTo(600 + 50 * expectedMaxZ(10), 6);
    // One subcloud: no tail. All in flight: only the last state's spread.
    expect(estimateStageMs(means, { window: 10, notStarted: 1, inFlight: [] }, sds)).toBe(200);
    const flying = { window: 4, notStarted: 0, inFlight: [0, 0, 0, 0].map(() => ({ stateIndex: 1, elapsedMs: 0 })) };
    expect(estimateStageMs(means, flying, sds)).toBeCloseTo(100 + 40 * expectedMaxZ(4), 6);
    expect(estimateRemainingMs(means, [stage, stage], sds)).toBeCloseTo(2 * estimateStageMs(means, stage, sds), 6);
  });
});

test('the sim latency midpoint comes from the extra args of a sim strategy only', () => {
  expect(simLatencyMidpoint({ driver: 'sim', sim_latency_min_ms: 200, sim_latency_max_ms: 1000 })).toBe(600);
  expect(simLatencyMidpoint({ driver: 'exec' })).toBeNull();
  expect(simLatencyMidpoint({})).toBeNull();
});

describe('estimateWindowedStageMs: waits for maintenance windows', () => {
  const means = [100, 100];
  const now = (at: number) => at;
  // A window that opens 10 s from now (and stays open).
  const later = (at: number) => Math.max(at, 10_000);

  test('no wait: the sliding window of the plain estimate', () => {
    expect(estimateWindowedStageMs(means, 2, [{ count: 4, opensAt: now }], 0)).toBe(400);
  });

  test('subclouds that wait give their slots to the others, then start when the window opens', () => {
    // 2 waiting first in step order, 4 that may start: those run 2 waves (400 ms), the 2 from 10 s.
    expect(estimateWindowedStageMs(means, 2, [{ count: 2, opensAt: later }, { count: 4, opensAt: now }], 0)).toBe(10_200);
  });

  test('from a stage start later than now, and a window already open by then', () => {
    expect(estimateWindowedStageMs(means, 1, [{ count: 2, opensAt: later }], 20_000)).toBe(400);
    expect(estimateWindowedStageMs(means, 1, [{ count: 2, opensAt: later }], 5_000)).toBe(5_400);
  });
});
