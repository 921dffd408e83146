/**
 * The transition writer on a file, and in the PostgreSQL pass (jest.pg.config.js) on a server,
 * where a batch is written a few statements over arrays (store/pg/transitions.ts): the same
 * batches, the same rows, the same refusals.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { loadPgBackend, type Db } from '../../src/store/open.js';
import { listHistory, listSteps } from '../../src/store/steps.js';
import { interruptRunning, TransitionWriter, type Transition } from '../../src/store/transitions.js';
import { NEXT_ATTEMPT } from '../../src/domain/transition.js';
import { twoStepStrategy } from '../helpers/store.js';
import { pgTestUrl } from '../helpers/pg-databases.js';

beforeAll(async () => {
  if (pgTestUrl()) await loadPgBackend();
});

describe('TransitionWriter', () => {
  let db: Db;
  let cleanup: () => void;
  beforeEach(async () => {
    ({ db, cleanup } = await twoStepStrategy());
  });
  afterEach(() => cleanup());

  const start = (stepId: number, cloud: string): Transition => ({
    stepId,
    subcloudId: stepId,
    cloud,
    from: 'initial',
    to: 'pre check',
    details: '',
    startAttempt: 1,
    ended: false,
  });

  test('a batch commits step states and opens history rows together', async () => {
    const w = new TransitionWriter(db);
    const batch = [start(1, 'a'), start(2, 'b')];
    await w.commit(batch);
    expect(batch.every((b) => typeof (b as { historyId?: number }).historyId === 'number')).toBe(true);
    expect((await listSteps(db)).map((s) => [s.cloud, s.state, s.attempt])).toEqual([
      ['a', 'pre check', 1],
      ['b', 'pre check', 1],
    ]);
    expect((await listHistory(db)).map((h) => [h.cloud, h.state, h.outcome])).toEqual([
      ['a', 'pre check', 'running'],
      ['b', 'pre check', 'running'],
    ]);
  });

  test('a stale writer changes nothing: the whole batch rolls back', async () => {
    const w = new TransitionWriter(db);
    await w.commit([start(1, 'a')]);
    // Step a is no longer initial: the guarded update matches no row and the batch fails whole.
    await expect(w.commit([start(2, 'b'), start(1, 'a')])).rejects.toThrow(/no longer in state initial/);
    expect((await listSteps(db)).map((s) => s.state)).toEqual(['pre check', 'initial']);
    expect(await listHistory(db)).toHaveLength(1);
    // The same without a run to open (which the one-running-operation index would refuse too):
    // the step's guard alone refuses it.
    const abort: Transition = { ...start(1, 'a'), to: 'aborted', startAttempt: undefined, ended: true };
    await expect(w.commit([start(2, 'b'), abort])).rejects.toThrow('step of a is no longer in state initial');
    expect((await listSteps(db)).map((s) => s.state)).toEqual(['pre check', 'initial']);
    expect(await listHistory(db)).toHaveLength(1);
  });

  test('completion closes the run and brings the endpoint in-sync', async () => {
    const w = new TransitionWriter(db);
    const first = start(1, 'a');
    await w.commit([first]);
    const historyId = (first as { historyId?: number }).historyId!;
    await w.commit([
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
    expect((await listSteps(db))[0].state).toBe('complete');
    expect((await listSteps(db))[0].finished_at).not.toBeNull();
    expect((await listHistory(db))[0].outcome).toBe('ok');
    expect(await db.prepare('SELECT patching_sync FROM subcloud WHERE id = 1').pluck().get()).toBe('in-sync');
  });

  /** The step's run of `from` ends ok and the next state starts (or the step completes). */
  const advance = (t: Transition, to: string, last = false): Transition => ({
    stepId: t.stepId,
    subcloudId: t.subcloudId,
    cloud: t.cloud,
    from: t.to,
    to,
    details: '',
    close: { historyId: t.historyId!, outcome: 'ok', finishedAt: '2025-01-01 10:00:00.000000', details: `${t.to} done` },
    startAttempt: last ? undefined : NEXT_ATTEMPT,
    completes: last ? { endpoint: 'patching' } : undefined,
    ended: last,
  });

  test('a step that moves twice in one batch: written in order, its runs numbered and closed as they went', async () => {
    const w = new TransitionWriter(db);
    const a = start(1, 'a');
    await w.commit([a]);
    const b = start(2, 'b');
    const a2 = advance(a, 'updating patches');
    await w.commit([b, a2]);
    // One batch: a moves on with no run opened (a start the stop rule held back), then starts
    // that state's run; b advances between the two.
    const a3: Transition = { ...advance(a2, 'creating VIM patch strategy'), startAttempt: undefined };
    const b2 = advance(b, 'updating patches');
    const a4: Transition = { ...a3, from: a3.to, close: undefined, startAttempt: NEXT_ATTEMPT };
    await w.commit([a3, b2, a4]);
    expect([a3.historyId, typeof b2.historyId, typeof a4.historyId]).toEqual([undefined, 'number', 'number']);
    await w.commit([advance(a4, 'complete', true)]);
    expect((await listSteps(db)).map((s) => [s.cloud, s.state, s.finished_at !== null])).toEqual([
      ['a', 'complete', true],
      ['b', 'updating patches', false],
    ]);
    expect((await listHistory(db)).map((h) => [h.cloud, h.state, h.attempt, h.outcome, h.details])).toEqual([
      ['a', 'pre check', 1, 'ok', 'pre check done'],
      ['b', 'pre check', 1, 'ok', 'pre check done'],
      ['a', 'updating patches', 1, 'ok', 'updating patches done'],
      ['b', 'updating patches', 1, 'running', ''],
      ['a', 'creating VIM patch strategy', 1, 'ok', 'creating VIM patch strategy done'],
    ]);
    expect(await db.prepare('SELECT name FROM subcloud WHERE patching_sync = $1 ORDER BY id').pluck().all('in-sync')).toEqual(['a']);
  });

  test('a run started as the next attempt follows the history of its step and state, in the order of the batch, and says its number', async () => {
    const w = new TransitionWriter(db);
    const a = start(1, 'a');
    await w.commit([a]);
    const failed = (t: Transition) => ({ historyId: t.historyId!, outcome: 'failed' as const, finishedAt: '2025-01-01 10:00:00.000000', details: 'no' });
    // One batch: a's run fails and the state is held back, then starts again; b's first run
    // beside it is numbered from its own history.
    const held: Transition = { ...a, from: 'pre check', close: failed(a), startAttempt: undefined };
    const again: Transition = { ...a, from: 'pre check', startAttempt: NEXT_ATTEMPT };
    const b: Transition = { ...start(2, 'b'), startAttempt: NEXT_ATTEMPT };
    await w.commit([held, b, again]);
    expect([again.startAttempt, b.startAttempt]).toEqual([2, 1]);
    const third: Transition = { ...a, from: 'pre check', close: failed(again), startAttempt: NEXT_ATTEMPT };
    await w.commit([third]);
    expect(third.startAttempt).toBe(3);
    expect((await listSteps(db)).map((s) => [s.cloud, s.attempt])).toEqual([
      ['a', 3],
      ['b', 1],
    ]);
    expect((await listHistory(db)).map((h) => [h.cloud, h.attempt, h.outcome])).toEqual([
      ['a', 1, 'failed'],
      ['b', 1, 'running'],
      ['a', 2, 'failed'],
      ['a', 3, 'running'],
    ]);
  });

  test('a run that is not running any more fails the whole batch, naming it; nothing of the batch is written', async () => {
    const w = new TransitionWriter(db);
    const a = start(1, 'a');
    const b = start(2, 'b');
    await w.commit([a, b]);
    const a2 = advance(a, 'updating patches');
    await w.commit([a2]);
    // a's first run is closed already: a writer that believed otherwise changes nothing.
    const stale: Transition = { ...advance(a, 'failed'), from: 'updating patches', startAttempt: undefined, ended: true };
    await expect(w.commit([advance(b, 'updating patches'), stale])).rejects.toThrow(`history row ${a.historyId} of a is not running`);
    expect((await listSteps(db)).map((s) => s.state)).toEqual(['updating patches', 'pre check']);
    expect((await listHistory(db)).filter((h) => h.outcome === 'running').map((h) => [h.cloud, h.state])).toEqual([
      ['b', 'pre check'],
      ['a', 'updating patches'],
    ]);
  });

  test('runs left running by a dead process become interrupted', async () => {
    await new TransitionWriter(db).commit([start(1, 'a'), start(2, 'b')]);
    expect(await interruptRunning(db)).toBe(2);
    expect((await listHistory(db)).map((h) => h.outcome)).toEqual(['interrupted', 'interrupted']);
  });
});
