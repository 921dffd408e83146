/** The pure part of operator control: failure budget, retry targets, what a report means, starting. */
import { describe, expect, test } from '@jest/globals';
import {
  decideReport,
  failureLimit,
  formatMaxFailures,
  gate,
  mayTakeSlot,
  parseMaxFailures,
  retryTarget,
  stagesToResize,
  stopRule,
} from '../../src/domain/control.js';
import { OperationError, UsageError } from '../../src/domain/errors.js';
import { statesOf } from '../../src/domain/types.js';

const PATCH = statesOf('patch');

describe('--max-failures', () => {
  test('a count or a percentage, kept as given', () => {
    expect(parseMaxFailures('3')).toEqual({ count: 3 });
    expect(parseMaxFailures('5%')).toEqual({ percent: 5 });
    expect(parseMaxFailures('2.5%')).toEqual({ percent: 2.5 });
    expect(formatMaxFailures(parseMaxFailures(' 7 '))).toBe('7');
    expect(formatMaxFailures(parseMaxFailures('100%'))).toBe('100%');
  });

  test.each(['0', '-1', '0%', '101%', 'x', '3.5', '', '%', '5 %', '1e3'])('%p is refused as a usage error', (v) => {
    expect(() => parseMaxFailures(v)).toThrow(UsageError);
  });

  test('a percentage of the steps, rounded up, at least 1; --stop-on-failure is 1; none is null', () => {
    expect(failureLimit('5%', false, 200)).toBe(10);
    expect(failureLimit('5%', false, 201)).toBe(11);
    expect(failureLimit('5%', false, 10)).toBe(1);
    expect(failureLimit('50%', false, 3)).toBe(2);
    expect(failureLimit('10%', false, 100)).toBe(10);
    expect(failureLimit('3', false, 2)).toBe(3);
    expect(failureLimit(null, true, 100)).toBe(1);
    expect(failureLimit('4', true, 100)).toBe(4);
    expect(failureLimit(null, false, 100)).toBeNull();
  });
});

describe('retry', () => {
  const both = { failed: true, aborted: true };
  test('a failed step goes back to the state it failed in; an aborted one to initial', () => {
    expect(retryTarget({ state: 'failed', failedIn: 'updating patches' }, both, PATCH)).toBe('updating patches');
    expect(retryTarget({ state: 'aborted', failedIn: 'pre check' }, both, PATCH)).toBe('initial');
  });
  test('a failure in no known state starts over', () => {
    expect(retryTarget({ state: 'failed', failedIn: null }, both, PATCH)).toBe('initial');
    expect(retryTarget({ state: 'failed', failedIn: 'gone state' }, both, PATCH)).toBe('initial');
  });
  test('only the kinds asked for; never a complete or running step', () => {
    expect(retryTarget({ state: 'failed', failedIn: 'pre check' }, { failed: false, aborted: true }, PATCH)).toBeNull();
    expect(retryTarget({ state: 'aborted', failedIn: null }, { failed: true, aborted: false }, PATCH)).toBeNull();
    expect(retryTarget({ state: 'complete', failedIn: null }, both, PATCH)).toBeNull();
    expect(retryTarget({ state: 'pre check', failedIn: null }, both, PATCH)).toBeNull();
  });
});

describe('strategy update: which stages change', () => {
  const stages = [
    { stage: 1, window: 1, ended: true },
    { stage: 2, window: 20, ended: false },
    { stage: 3, window: 20, ended: false },
  ];
  test('without --stage, every stage not ended; the ended ones are kept', () => {
    expect(stagesToResize(stages)).toEqual({ resize: [2, 3], kept: [stages[0]] });
  });
  test('--stage K: that stage, unless it has ended', () => {
    expect(stagesToResize(stages, 3)).toEqual({ resize: [3], kept: [] });
    expect(() => stagesToResize(stages, 1)).toThrow(OperationError);
    expect(() => stagesToResize(stages, 1)).toThrow('Stage 1 has ended and cannot be updated (it ran with window 1)');
  });
});

describe('what a report means', () => {
  test('ok goes to the next state, the last to complete', () => {
    expect(decideReport('pre check', PATCH, { kind: 'next' }, 3_600_000)).toEqual({ kind: 'advance', to: 'updating patches', details: '', ended: false });
    expect(decideReport('finishing patch strategy', PATCH, { kind: 'next', details: 'done' }, 3_600_000)).toEqual({
      kind: 'advance',
      to: 'complete',
      details: 'done',
      ended: true,
    });
  });
  test('a driver may skip ahead or to complete, never back, to itself or to an unknown state', () => {
    expect(decideReport('pre check', PATCH, { kind: 'next', next: 'applying VIM patch strategy' }, 3_600_000)).toMatchObject({ kind: 'advance', to: 'applying VIM patch strategy' });
    expect(decideReport('pre check', PATCH, { kind: 'next', next: 'complete' }, 3_600_000)).toMatchObject({ kind: 'advance', to: 'complete', ended: true });
    for (const next of ['pre check', 'nowhere']) {
      expect(decideReport('updating patches', PATCH, { kind: 'next', next }, 3_600_000)).toEqual({
        kind: 'fail',
        outcome: 'failed',
        reason: `the driver reported an invalid next state '${next}'`,
        details: `updating patches: the driver reported an invalid next state '${next}'`,
      });
    }
  });
  test("a driver's own retry runs the same state again after its delay; its own timeout is a timeout", () => {
    expect(decideReport('pre check', PATCH, { kind: 'retry', reason: 'exit 75', outcome: 'failed', delayMs: 2000 }, 3_600_000)).toEqual({
      kind: 'again',
      details: 'pre check: exit 75 (run again in 2s)',
      reason: 'exit 75',
      outcome: 'failed',
      delayMs: 2000,
    });
    expect(decideReport('pre check', PATCH, { kind: 'failed', reason: 'timed out after 3s', timeout: true }, 3_600_000)).toMatchObject({ kind: 'fail', outcome: 'timeout' });
  });

  test('a failure or a timeout fails the step, naming the state', () => {
    expect(decideReport('pre check', PATCH, { kind: 'failed', reason: 'boom' }, 3_600_000)).toEqual({ kind: 'fail', outcome: 'failed', reason: 'boom', details: 'pre check: boom' });
    expect(decideReport('pre check', PATCH, { kind: 'timeout' }, 5_000)).toEqual({
      kind: 'fail',
      outcome: 'timeout',
      reason: 'timed out after 5s',
      details: 'pre check: timed out after 5s',
    });
  });
});

describe('may the window start one more', () => {
  const base = { paused: false, noNewSubclouds: false, noNewOperations: false, failed: 0, limit: null };
  test('under the window, not paused, under the budget', () => {
    expect(mayTakeSlot(gate(base), 'new', 3, 4)).toBe(true);
    expect(mayTakeSlot(gate(base), 'new', 4, 4)).toBe(false);
    // A window made smaller: none until fewer than N are in flight.
    expect(mayTakeSlot(gate(base), 'new', 7, 2)).toBe(false);
    expect(mayTakeSlot(gate({ ...base, paused: true }), 'new', 3, 4)).toBe(false);
    expect(mayTakeSlot(gate({ ...base, noNewSubclouds: true }), 'new', 3, 4)).toBe(false);
    expect(mayTakeSlot(gate({ ...base, failed: 3, limit: 3 }), 'new', 3, 4)).toBe(false);
    expect(mayTakeSlot(gate({ ...base, failed: 2, limit: 3 }), 'new', 3, 4)).toBe(true);
  });

  test('a subcloud caught mid-state goes on through a pause, an abort and a spent budget, never after a signal', () => {
    expect(mayTakeSlot(gate({ ...base, paused: true }), 'resumed', 0, 4)).toBe(true);
    expect(mayTakeSlot(gate({ ...base, noNewSubclouds: true }), 'resumed', 0, 4)).toBe(true);
    expect(mayTakeSlot(gate({ ...base, failed: 3, limit: 3 }), 'resumed', 0, 4)).toBe(true);
    expect(mayTakeSlot(gate({ ...base, noNewOperations: true }), 'resumed', 0, 4)).toBe(false);
    expect(gate({ ...base, failed: 3, limit: 3 }).stopping).toBe(true);
    expect(gate({ ...base, paused: true }).stopping).toBe(false);
  });
});

describe('the stop rule at commit', () => {
  const open = gate({ paused: false, noNewSubclouds: false, noNewOperations: false, failed: 0, limit: null });
  const signal = gate({ paused: false, noNewSubclouds: true, noNewOperations: true, failed: 0, limit: null });
  const paused = gate({ paused: true, noNewSubclouds: false, noNewOperations: false, failed: 0, limit: null });
  const first = { startAttempt: 1 };
  const next = { close: {}, startAttempt: 1 };
  const retry = { close: {}, retryInMs: 5 };
  const end = { close: {} };
  const fresh = { started: false, resumed: false };
  const inFlight = { started: true, resumed: false };
  test('nothing is stopped while the gate is open', () => {
    for (const t of [first, next, retry, end]) expect(stopRule(t, open, fresh)).toBe('keep');
  });
  test('after a signal: a first start is held back, a next state or a retry is stripped, an end is kept', () => {
    expect(stopRule(first, signal, fresh)).toBe('hold');
    expect(stopRule(first, signal, { started: false, resumed: true })).toBe('hold');
    expect(stopRule(next, signal, inFlight)).toBe('strip');
    expect(stopRule(retry, signal, inFlight)).toBe('strip');
    expect(stopRule({ startAttempt: 2 }, signal, inFlight)).toBe('hold');
    expect(stopRule(end, signal, inFlight)).toBe('keep');
  });
  test('a pause holds back new subclouds only', () => {
    expect(stopRule(first, paused, fresh)).toBe('hold');
    expect(stopRule(first, paused, { started: false, resumed: true })).toBe('keep');
    expect(stopRule(next, paused, inFlight)).toBe('keep');
  });
});
