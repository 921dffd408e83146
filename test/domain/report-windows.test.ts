/** Each stage's window over time, from the event record (pure). */
import { describe, expect, test } from '@jest/globals';
import { maxParallelHistory, stageWindowSpans } from '../../src/domain/report-windows.js';
import type { ReportEvent } from '../../src/domain/report.js';

const S = 1_000_000;
const T0 = 1_700_000_000 * S;
const updated = (at: number, details: string, user = 'alice'): ReportEvent => ({ atUs: T0 + at * S, event: 'updated', user, host: 'h', pid: 1, details });
const span = (from: number, to: number, window: number, setAt: number | null, user = 'alice') => ({
  fromUs: T0 + from * S,
  toUs: T0 + to * S,
  window,
  setBy: setAt === null ? null : { atUs: T0 + setAt * S, user, host: 'h' },
});

describe('stageWindowSpans', () => {
  test('nothing changed it: the window now, over the whole span, as created', () => {
    expect(stageWindowSpans([], 1, 3, T0, T0 + 10 * S)).toEqual([span(0, 10, 3, null)]);
  });

  test('changed while it ran: the window at create (the first change\'s old value), then each new one from its update', () => {
    const events = [
      updated(4, 'max parallel subclouds: 1 -> 2; stage 1 window: 1 -> 2; stage 2 window: 5 -> 2'),
      { ...updated(5, ''), event: 'paused' },
      updated(7, 'stage 1 window: 2 -> 6', 'bob'),
    ];
    expect(stageWindowSpans(events, 1, 6, T0, T0 + 10 * S)).toEqual([span(0, 4, 1, null), span(4, 7, 2, 4), span(7, 10, 6, 7, 'bob')]);
  });

  test('changed before it started: in force from its start; changed after it ended: not drawn (it ran with the old one)', () => {
    const events = [updated(1, 'stage 2 window: 5 -> 2'), updated(20, 'stage 2 window: 2 -> 9')];
    expect(stageWindowSpans(events, 2, 9, T0 + 3 * S, T0 + 10 * S)).toEqual([span(3, 10, 2, 1)]);
  });

  test('a change of another stage, or of the failure budget, is not this stage\'s', () => {
    const events = [updated(4, 'stage 2 window: 5 -> 2'), updated(5, 'max failures: None -> 5%')];
    expect(stageWindowSpans(events, 1, 3, T0, T0 + 10 * S)).toEqual([span(0, 10, 3, null)]);
  });
});

describe('maxParallelHistory', () => {
  test('the value at create, then each update', () => {
    expect(maxParallelHistory([updated(4, 'max parallel subclouds: None -> 4; stage 1 window: 2 -> 4')], 4)).toEqual({
      atCreate: null,
      changes: [{ atUs: T0 + 4 * S, to: 4, user: 'alice' }],
    });
    expect(maxParallelHistory([], 7)).toEqual({ atCreate: 7, changes: [] });
  });
});
