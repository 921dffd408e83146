import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import type { Db } from '../../src/store/open.js';
import { listHistory, listSteps } from '../../src/store/steps.js';
import { interruptRunning, TransitionWriter } from '../../src/store/transitions.js';
import { twoStepStrategy } from '../helpers/store.js';

describe('TransitionWriter', () => {
  let db: Db;
  let cleanup: () => void;
  beforeEach(() => {
    ({ db, cleanup } = twoStepStrategy());
  });
  afterEach(() => cleanup());

  const start = (stepId: number, cloud: string) => ({
    stepId,
    subcloudId: stepId,
    cloud,
    from: 'initial',
    to: 'pre check',
    details: '',
    startAttempt: 1,
    ended: false,
  });

  test('a batch commits step states and opens history rows together', () => {
    const w = new TransitionWriter(db);
    const batch = [start(1, 'a'), start(2, 'b')];
    w.commit(batch);
    expect(batch.every((b) => typeof (b as { historyId?: number }).historyId === 'number')).toBe(true);
    expect(listSteps(db).map((s) => [s.cloud, s.state, s.attempt])).toEqual([
      ['a', 'pre check', 1],
      ['b', 'pre check', 1],
    ]);
    expect(listHistory(db).map((h) => [h.cloud, h.state, h.outcome])).toEqual([
      ['a', 'pre check', 'running'],
      ['b', 'pre check', 'running'],
    ]);
  });

  test('a stale writer changes nothing: the whole batch rolls back', () => {
    const w = new TransitionWriter(db);
    w.commit([start(1, 'a')]);
    // Step a is no longer initial: the guarded update matches no row and the batch fails whole.
    expect(() => w.commit([start(2, 'b'), start(1, 'a')])).toThrow(/no longer in state initial/);
    expect(listSteps(db).map((s) => s.state)).toEqual(['pre check', 'initial']);
    expect(listHistory(db)).toHaveLength(1);
  });

  test('completion closes the run and brings the endpoint in-sync', () => {
    const w = new TransitionWriter(db);
    const first = start(1, 'a');
    w.commit([first]);
    const historyId = (first as { historyId?: number }).historyId!;
    w.commit([
      {
        stepId: 1,
        subcloudId: 1,
        cloud: 'a',
        from: 'pre check',
        to: 'complete',
        details: '',
        close: { historyId, outcome: 'ok', finishedAt: '2025-01-01 10:00:00.000000', details: '' },
        completes: { endpoint: 'patching' },
        ended: true,
      },
    ]);
    expect(listSteps(db)[0].state).toBe('complete');
    expect(listSteps(db)[0].finished_at).not.toBeNull();
    expect(listHistory(db)[0].outcome).toBe('ok');
    expect(db.prepare('SELECT patching_sync FROM subcloud WHERE id = 1').pluck().get()).toBe('in-sync');
  });

  test('runs left running by a dead process become interrupted', () => {
    new TransitionWriter(db).commit([start(1, 'a'), start(2, 'b')]);
    expect(interruptRunning(db)).toBe(2);
    expect(listHistory(db).map((h) => h.outcome)).toEqual(['interrupted', 'interrupted']);
  });
});
