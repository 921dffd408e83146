import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import type { Db } from '../../src/store/open.js';
import { deleteStrategy } from '../../src/store/strategy.js';
import { TransitionWriter, type Transition } from '../../src/store/transitions.js';
import { durationStats, observedDurations } from '../../src/store/durations.js';
import { meanMs } from '../../src/domain/estimate.js';
import { nowMicros } from '../../src/store/clock.js';
import { formatTimestamp } from '../../src/domain/time.js';
import { REAL_CLOCK } from '../../src/platform/clock.js';
import { twoStepStrategy } from '../helpers/store.js';

describe('state duration statistics', () => {
  let db: Db;
  let cleanup: () => void;
  beforeEach(async () => {
    ({ db, cleanup } = await twoStepStrategy());
  });
  afterEach(() => cleanup());

  test('ok runs of a batch are added per state in the same commit, and outlive strategy delete', async () => {
    const w = new TransitionWriter(db, 'patch');
    const start = (stepId: number, cloud: string): Transition => ({
      stepId, subcloudId: stepId, cloud, from: 'initial', to: 'pre check', details: '', startAttempt: 1, ended: false,
    });
    const a = start(1, 'a');
    const b = start(2, 'b');
    await w.commit([a, b]);
    const close = (t: Transition, outcome: 'ok' | 'failed', durationMs: number): Transition => ({
      stepId: t.stepId, subcloudId: t.subcloudId, cloud: t.cloud, from: 'pre check', to: outcome === 'ok' ? 'updating patches' : 'failed',
      details: '', ended: outcome !== 'ok',
      close: { historyId: t.historyId!, outcome, finishedAt: formatTimestamp(nowMicros(REAL_CLOCK)), details: '', durationMs },
      startAttempt: outcome === 'ok' ? 1 : undefined,
    });
    await w.commit([close(a, 'ok', 100), close(b, 'failed', 5000)]);
    let stats = await durationStats(db, 'patch');
    expect([...stats.keys()]).toEqual(['pre check']);
    expect(stats.get('pre check')).toEqual({ count: 1, sumMs: 100, sumSqMs: 10_000, minMs: 100, maxMs: 100 });
    // The history knows this strategy's ok runs too.
    expect((await observedDurations(db)).get('pre check')!.count).toBe(1);

    await deleteStrategy(db);
    stats = await durationStats(db, 'patch');
    expect(meanMs(stats.get('pre check')!)).toBe(100);
    expect((await observedDurations(db)).size).toBe(0);
    expect((await durationStats(db, 'firmware')).size).toBe(0);
  });

  test('a writer without a type keeps no statistics', async () => {
    const w = new TransitionWriter(db);
    await w.commit([{ stepId: 1, subcloudId: 1, cloud: 'a', from: 'initial', to: 'pre check', details: '', startAttempt: 1, ended: false }]);
    expect((await durationStats(db, 'patch')).size).toBe(0);
  });
});
