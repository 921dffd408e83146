import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { estimateStageMs } from '../../src/domain/estimate.js';
import {
  describeRate,
  nextStartWait,
  parseStartRateOptions,
  rampSchedule,
  rateInForce,
  readRatePerMin,
  readStoredRate,
  startRateViolations,
  startSpacingMs,
  storeStartRate,
} from '../../src/domain/start-rate.js';

describe('start rate options', () => {
  test('N/min, N/s, N/h and decimals read as starts a minute', () => {
    expect(readRatePerMin('10/min')).toBe(10);
    expect(readRatePerMin('1/s')).toBe(60);
    expect(readRatePerMin('30/h')).toBe(0.5);
    expect(readRatePerMin(' 0.5 / min ')).toBe(0.5);
    expect(readRatePerMin('10')).toBeNull();
    expect(readRatePerMin('0/min')).toBeNull();
    expect(readRatePerMin('10/day')).toBeNull();
    expect(readRatePerMin('2000/s')).toBeNull();
  });

  test('the three options together, each refused by name', () => {
    expect(parseStartRateOptions({})).toBeUndefined();
    expect(parseStartRateOptions({ startRate: '5/min' })).toEqual({ perMin: 5, factor: 1, after: null });
    expect(parseStartRateOptions({ startRate: '5/min', ramp: '2', rampAfter: '10' })).toEqual({ perMin: 5, factor: 2, after: 10 });
    expect(() => parseStartRateOptions({ ramp: '2', rampAfter: '3' })).toThrow(/need --start-rate/);
    expect(() => parseStartRateOptions({ startRate: 'fast' })).toThrow(/invalid --start-rate 'fast'/);
    expect(() => parseStartRateOptions({ startRate: '5/min', ramp: '2' })).toThrow(/go together/);
    expect(() => parseStartRateOptions({ startRate: '5/min', ramp: '0.5', rampAfter: '3' })).toThrow(/invalid --ramp '0.5'/);
    expect(() => parseStartRateOptions({ startRate: '5/min', ramp: '2', rampAfter: '0' })).toThrow(/invalid --ramp-after '0'/);
    expect(() => parseStartRateOptions({ startRate: 'none' })).toThrow(/invalid --start-rate/);
    expect(parseStartRateOptions({ startRate: 'none' }, true)).toBeNull();
    expect(() => parseStartRateOptions({ startRate: 'none', ramp: '2', rampAfter: '1' }, true)).toThrow(/takes no --ramp/);
  });

  test('stored and read back; what no dcm wrote is no rate', () => {
    const r = { perMin: 7.5, factor: 1.5, after: 4 };
    expect(readStoredRate(storeStartRate(r))).toEqual(r);
    expect(readStoredRate(null)).toBeNull();
    expect(readStoredRate('not json')).toBeNull();
    expect(readStoredRate('{"per_min":-1}')).toBeNull();
  });
});

describe('the rate in force', () => {
  test('multiplied by the factor after each K complete, capped', () => {
    const r = { perMin: 10, factor: 2, after: 5 };
    expect([0, 4, 5, 9, 10, 15].map((n) => rateInForce(r, n))).toEqual([10, 10, 20, 20, 40, 80]);
    expect(rateInForce(r, 10_000_000)).toBe(60_000);
    expect(rateInForce({ perMin: 3, factor: 1, after: null }, 99)).toBe(3);
    expect(describeRate(r, 5)).toBe('20/min (10/min x2 every 5 complete)');
    expect(describeRate(null, 5)).toBe('none');
  });

  test('the wait before the next start', () => {
    expect(startSpacingMs(10)).toBe(6000);
    expect(nextStartWait(10, null, 1000)).toBe(0);
    expect(nextStartWait(10, 1000, 4000)).toBe(3000);
    expect(nextStartWait(10, 1000, 9000)).toBe(0);
  });
});

describe('the invariant: startRateViolations', () => {
  const at = (ms: number, cloud = `s${ms}`) => ({ atMs: ms, cloud });

  test('starts spaced by the rate in force pass; one too soon is named with its previous start', () => {
    const schedule = [{ fromMs: 0, perMin: 60 }];
    expect(startRateViolations([at(0), at(1000), at(2000)], schedule)).toEqual([]);
    const v = startRateViolations([at(0, 'a'), at(1000, 'b'), at(1500, 'c')], schedule);
    expect(v).toEqual([{ cloud: 'c', atMs: 1500, previous: { cloud: 'b', atMs: 1000 }, perMin: 60, earlyMs: 500 }]);
  });

  test('no rate in force is no violation; a rate set later spaces from the last start before it', () => {
    const schedule = [{ fromMs: 0, perMin: null }, { fromMs: 5000, perMin: 6 }];
    expect(startRateViolations([at(0), at(1), at(2)], schedule)).toEqual([]);
    // 10 s apart are asked at 6/min: the start at 5001 is 4999 ms after the one at 2.
    expect(startRateViolations([at(2), at(5001)], schedule).map((v) => v.cloud)).toEqual(['s5001']);
  });

  test('the schedule of a ramp and an update: segments where the rate changes', () => {
    const r = { perMin: 6, factor: 2, after: 2 };
    const s = rampSchedule(
      [
        { atMs: 0, rate: r },
        { atMs: 50_000, rate: { perMin: 1, factor: 1, after: null } },
      ],
      [10_000, 20_000, 30_000, 40_000],
    );
    expect(s).toEqual([
      { fromMs: 0, perMin: 6 },
      { fromMs: 20_000, perMin: 12 },
      { fromMs: 40_000, perMin: 24 },
      { fromMs: 50_000, perMin: 1 },
    ]);
  });

  test('a limiter that waits the spacing of the rate in force never violates it (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.record({ atMs: fc.integer({ min: 0, max: 600_000 }), perMin: fc.oneof(fc.constant(null), fc.integer({ min: 1, max: 120 })) }), { maxLength: 5 }),
        (asks, changes) => {
          const schedule = [...changes].sort((a, b) => a.atMs - b.atMs).map((c) => ({ fromMs: c.atMs, perMin: c.perMin }));
          const rateAt = (t: number) => {
            let r: number | null = null;
            for (const s of schedule) if (s.fromMs <= t) r = s.perMin;
            return r;
          };
          // Each start asks after a gap, then waits until the rate in force lets it go (re-checked
          // when the schedule changes meanwhile), as the commit's check does.
          const starts: { atMs: number; cloud: string }[] = [];
          let t = 0;
          let last: number | null = null;
          for (const [i, gap] of asks.entries()) {
            t += gap;
            for (;;) {
              const r = rateAt(t);
              const wait = r === null ? 0 : nextStartWait(r, last, t);
              if (wait === 0) break;
              t += wait;
            }
            starts.push({ atMs: t, cloud: `s${i}` });
            last = t;
          }
          expect(startRateViolations(starts, schedule, 1e-6)).toEqual([]);
        },
      ),
    );
  });
});

describe('the estimate counts the rate', () => {
  test('the Nth subcloud still to start starts no sooner than N spacings from now', () => {
    const means = [1000, 1000];
    // A window of 6: without a rate all six run at once (2 s); at 2/min the sixth starts after 150 s.
    expect(estimateStageMs(means, { window: 6, notStarted: 6, inFlight: [] })).toBe(2000);
    expect(estimateStageMs(means, { window: 6, notStarted: 6, inFlight: [], startSpacingMs: startSpacingMs(2) })).toBe(152_000);
    // A rate faster than the window refills: only the second slot's first start is 10 ms later.
    expect(estimateStageMs(means, { window: 2, notStarted: 6, inFlight: [], startSpacingMs: 10 })).toBe(6010);
  });
});
