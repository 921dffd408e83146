/** The pure part of stage gates: parsing, each stage's budget, and what happens after a stage (time given, not read). */
import { describe, expect, test } from '@jest/globals';
import { gate } from '../../src/domain/control.js';
import { UsageError } from '../../src/domain/errors.js';
import {
  afterStage,
  checkOutcome,
  formatStageGate,
  formatStageMaxFailures,
  gateText,
  parseStageGate,
  parseStageMaxFailures,
  stageBudgetExceeded,
  stageFailureLimit,
  type StageEnd,
} from '../../src/domain/stage-gates.js';

describe('--stage-gate', () => {
  test('none, pause, check, soak=DURATION; stored as dcm prints durations', () => {
    expect(parseStageGate('none')).toEqual({ kind: 'none' });
    expect(parseStageGate('pause')).toEqual({ kind: 'pause' });
    expect(parseStageGate('check')).toEqual({ kind: 'check' });
    expect(parseStageGate('soak=90s')).toEqual({ kind: 'soak', ms: 90_000 });
    expect(formatStageGate(parseStageGate('soak=30m'))).toBe('soak=30m');
    expect(formatStageGate(parseStageGate(' pause '))).toBe('pause');
  });

  test.each(['soak=x', 'soak=', 'soak=0s', 'soak=10', 'soak', 'wait', 'Pause', ''])('%p is a usage error naming the option', (text) => {
    expect(() => parseStageGate(text)).toThrow(UsageError);
    expect(() => parseStageGate(text)).toThrow(/--stage-gate/);
  });
});

describe('--stage-max-failures', () => {
  test('0 and more, or a percentage up to 100%', () => {
    expect(parseStageMaxFailures('0')).toEqual({ count: 0 });
    expect(parseStageMaxFailures('3')).toEqual({ count: 3 });
    expect(formatStageMaxFailures(parseStageMaxFailures('25%'))).toBe('25%');
    expect(formatStageMaxFailures(parseStageMaxFailures('0%'))).toBe('0%');
  });

  test.each(['-1', '1.5', '101%', 'x', '', '%'])('%p is a usage error naming the option', (text) => {
    expect(() => parseStageMaxFailures(text)).toThrow(UsageError);
    expect(() => parseStageMaxFailures(text)).toThrow(/--stage-max-failures/);
  });

  test("a percentage is of the stage's steps, rounded down; the budget is exceeded only above it", () => {
    expect(stageFailureLimit(null, 10)).toBeNull();
    expect(stageFailureLimit('2', 10)).toBe(2);
    expect(stageFailureLimit('25%', 4)).toBe(1);
    expect(stageFailureLimit('25%', 3)).toBe(0);
    expect(stageFailureLimit('10%', 30)).toBe(3);
    expect(stageBudgetExceeded(0, 0)).toBe(false);
    expect(stageBudgetExceeded(1, 0)).toBe(true);
    expect(stageBudgetExceeded(2, 2)).toBe(false);
    expect(stageBudgetExceeded(3, 2)).toBe(true);
    expect(stageBudgetExceeded(99, null)).toBe(false);
  });

  test('an exceeded stage budget stops new subclouds, not those in flight', () => {
    const g = gate({ paused: false, noNewSubclouds: false, noNewOperations: false, failed: 1, limit: null, stageHeld: true });
    expect(g).toEqual({ newSubclouds: false, operations: true, stopping: true, nextStates: true });
    const open = gate({ paused: false, noNewSubclouds: false, noNewOperations: false, failed: 1, limit: null });
    expect(open.newSubclouds).toBe(true);
  });
});

const T0 = Date.UTC(2026, 11, 1, 22, 0, 0);

function end(over: Partial<StageEnd>): StageEnd {
  return { stage: 1, next: 2, gate: { kind: 'none' }, state: null, failed: 0, limit: null, notStarted: 0, endedMs: T0, dueMs: null, paused: false, nowMs: T0 + 10, ...over };
}

describe('after a stage', () => {
  test('none: the next stage starts, nothing recorded (as before gates)', () => {
    expect(afterStage(end({}))).toEqual({ kind: 'go' });
  });

  test('its budget exceeded: held (paused), whatever its gate, naming the count and what resume does', () => {
    const a = afterStage(end({ failed: 2, limit: 0, notStarted: 1, gate: { kind: 'soak', ms: 60_000 } }));
    expect(a).toMatchObject({ kind: 'pause', state: 'held' });
    expect(a.kind === 'pause' && a.reason).toMatch(/^stage 1: 2 step\(s\) failed, more than its budget of 0 .*1 of its subcloud\(s\) not started.*dcm strategy resume/);
    // At the budget, not above it: the gate decides.
    expect(afterStage(end({ failed: 1, limit: 1 }))).toEqual({ kind: 'go' });
  });

  test('the last stage: its budget holds only while some of it is left to start; no gate after it', () => {
    expect(afterStage(end({ next: null, failed: 1, limit: 0, notStarted: 0 }))).toEqual({ kind: 'go' });
    expect(afterStage(end({ next: null, failed: 1, limit: 0, notStarted: 3 }))).toMatchObject({ kind: 'pause', state: 'held' });
    expect(afterStage(end({ next: null, gate: { kind: 'pause' } }))).toEqual({ kind: 'go' });
  });

  test('pause: paused until resumed; resumed (even while no apply ran) is promoted', () => {
    expect(afterStage(end({ gate: { kind: 'pause' } }))).toMatchObject({ kind: 'pause', state: 'paused', reason: expect.stringContaining('starts stage 2') });
    expect(afterStage(end({ gate: { kind: 'pause' }, state: 'paused', paused: true }))).toEqual({ kind: 'wait' });
    expect(afterStage(end({ gate: { kind: 'pause' }, state: 'paused', paused: false }))).toMatchObject({ kind: 'go', record: { state: 'promoted' } });
    expect(afterStage(end({ failed: 3, limit: 0, state: 'held', paused: false }))).toMatchObject({ kind: 'go', record: { state: 'promoted' } });
    // Passed or promoted once: never asked again.
    expect(afterStage(end({ gate: { kind: 'pause' }, state: 'promoted', failed: 5, limit: 0 }))).toEqual({ kind: 'go' });
    expect(afterStage(end({ gate: { kind: 'check' }, state: 'passed' }))).toEqual({ kind: 'go' });
  });

  test('soak: from the stage end; a restart waits only the rest; done once the time has come', () => {
    const soak = { kind: 'soak' as const, ms: 60_000 };
    expect(afterStage(end({ gate: soak, nowMs: T0 + 10_000 }))).toEqual({ kind: 'soak', dueMs: T0 + 60_000, start: true });
    // A restart: the rest of it, nothing written again.
    expect(afterStage(end({ gate: soak, state: 'soaking', dueMs: T0 + 60_000, nowMs: T0 + 59_999 }))).toEqual({ kind: 'soak', dueMs: T0 + 60_000, start: false });
    expect(afterStage(end({ gate: soak, state: 'soaking', dueMs: T0 + 60_000, nowMs: T0 + 60_000 }))).toMatchObject({ kind: 'go', record: { state: 'passed' } });
    // The soak changed while it runs (strategy update): from the same end, the new due time written.
    expect(afterStage(end({ gate: { kind: 'soak', ms: 120_000 }, state: 'soaking', dueMs: T0 + 60_000, nowMs: T0 + 30_000 }))).toEqual({ kind: 'soak', dueMs: T0 + 120_000, start: true });
    expect(afterStage(end({ gate: { kind: 'soak', ms: 20_000 }, state: 'soaking', dueMs: T0 + 60_000, nowMs: T0 + 30_000 }))).toMatchObject({ kind: 'go', record: { state: 'passed' } });
    expect(afterStage(end({ gate: { kind: 'none' }, state: 'soaking', dueMs: T0 + 60_000, nowMs: T0 + 30_000 }))).toEqual({ kind: 'go' });
    // Killed long enough ago that the soak is over before it was even written.
    expect(afterStage(end({ gate: soak, nowMs: T0 + 61_000 }))).toMatchObject({ kind: 'go', record: { state: 'passed' } });
  });

  test('some of the stage not started and nothing holds it (promoted, or its budget raised since): the rest runs first', () => {
    expect(afterStage(end({ notStarted: 2, gate: { kind: 'pause' } }))).toEqual({ kind: 'again' });
    expect(afterStage(end({ notStarted: 2, state: 'promoted', failed: 3, limit: 0 }))).toEqual({ kind: 'again' });
    expect(afterStage(end({ notStarted: 2, failed: 1, limit: 1 }))).toEqual({ kind: 'again' });
  });

  test('check: run it (again after a restart in the middle of it)', () => {
    expect(afterStage(end({ gate: { kind: 'check' } }))).toEqual({ kind: 'check' });
    expect(afterStage(end({ gate: { kind: 'check' }, state: 'checking' }))).toEqual({ kind: 'check' });
  });

  test("a check's outcome: 0 passes; anything else pauses with its code (or signal) and last line", () => {
    expect(checkOutcome(1, 2, { code: 0, signal: null, lastLine: 'ok' })).toMatchObject({ kind: 'go', record: { state: 'passed' } });
    expect(checkOutcome(1, 2, { code: 3, signal: null, lastLine: 'alarms: 2 critical' })).toEqual({
      kind: 'pause',
      state: 'paused',
      reason: 'stage 1 gate check exited 3: alarms: 2 critical; `dcm strategy resume` starts stage 2',
    });
    expect(checkOutcome(1, 2, { code: null, signal: 'SIGKILL', lastLine: '' })).toMatchObject({ reason: expect.stringMatching(/^stage 1 gate check was killed by SIGKILL;/) });
  });

  test('as status shows a stage', () => {
    expect(gateText({ stage: 1, gate: 'pause', maxFailures: '0', state: 'paused', reason: 'why' })).toBe('stage 1: pause, max failures 0: paused (why)');
    expect(gateText({ stage: 2, gate: 'soak=1m', maxFailures: null, state: null, reason: null, last: true })).toBe('stage 2: soak=1m (last stage: no gate after it)');
    expect(gateText({ stage: 2, gate: 'none', maxFailures: null, state: null, reason: null })).toBe('stage 2: none');
  });
});
