/** The pure rules of deferred steps (issue 18, "Sites that answer"): options, deadline, try again or fail. */
import { describe, expect, test } from '@jest/globals';
import { deadlineOf, decideDeferral, parseDeferDelay, parseDeferUntil } from '../../src/domain/deferral.js';
import { decideReport, endOfRun } from '../../src/domain/control.js';
import { UsageError } from '../../src/domain/errors.js';
import { statesOf } from '../../src/domain/types.js';

const base = { state: 'pre check', reason: 'exit 75: no route', delayMs: 1000, deferrals: 0 };

describe('--defer-delay and --defer-until', () => {
  test('a delay needs its unit and is above 0', () => {
    expect(parseDeferDelay('250ms')).toBe(250);
    expect(parseDeferDelay('2m')).toBe(120_000);
    expect(() => parseDeferDelay('10')).toThrow(UsageError);
    expect(() => parseDeferDelay('0s')).toThrow('It must be longer than 0');
  });

  test('until: a duration from the first start, or an ISO time (UTC when it names no zone)', () => {
    expect(parseDeferUntil('2h')).toEqual({ afterMs: 7_200_000 });
    expect(parseDeferUntil('2026-12-02T06:00')).toEqual({ atMs: Date.UTC(2026, 11, 2, 6, 0) });
    expect(parseDeferUntil('2026-12-02 06:00:00+01:00')).toEqual({ atMs: Date.UTC(2026, 11, 2, 5, 0) });
    expect(() => parseDeferUntil('0s')).toThrow(UsageError);
    expect(() => parseDeferUntil('soon')).toThrow("Invalid --defer-until value: soon. Give a duration from the apply's start");
    expect(deadlineOf({ afterMs: 500 }, 10_000)).toBe(10_500);
    expect(deadlineOf({ atMs: 42 }, 10_000)).toBe(42);
    expect(deadlineOf(null, 10_000)).toBeNull();
  });
});

describe('try again or fail', () => {
  test('with a deadline: deferred while the next try starts by the deadline, then failed unreachable', () => {
    expect(decideDeferral({ ...base, nowMs: 0, deadlineMs: 1000, othersLeft: false })).toEqual({
      kind: 'defer',
      dueMs: 1000,
      details: 'pre check: exit 75: no route; deferred (1), tried again in 1s',
    });
    const late = decideDeferral({ ...base, nowMs: 1, deadlineMs: 1000, othersLeft: true, deferrals: 2 });
    expect(late).toEqual({
      kind: 'fail',
      reason: 'unreachable: exit 75: no route (3 tries; the --defer-until deadline is reached)',
      details: 'pre check: unreachable: exit 75: no route (3 tries; the --defer-until deadline is reached)',
    });
  });

  test('without one: deferred while the stage has other work, failed once it has none', () => {
    expect(decideDeferral({ ...base, nowMs: 0, deadlineMs: null, othersLeft: true }).kind).toBe('defer');
    const d = decideDeferral({ ...base, nowMs: 0, deadlineMs: null, othersLeft: false });
    expect(d).toMatchObject({ kind: 'fail', reason: 'unreachable: exit 75: no route (1 try; the rest of its stage is done)' });
  });

  test("a driver's defer is its own decision, and a deferred step left makes the strategy failed, not complete", () => {
    expect(decideReport('pre check', statesOf('patch'), { kind: 'defer', reason: 'x' }, 1000)).toEqual({ kind: 'defer', reason: 'x' });
    expect(endOfRun({ signal: null, aborting: false, counts: { complete: 3, deferred: 1 }, failedSeen: false })).toEqual({ state: 'failed', exit: 1 });
  });
});
