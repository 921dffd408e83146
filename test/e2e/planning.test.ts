/**
 * Stage planning end to end (SPEC §5), through the built binary: `strategy create` on the example
 * fleet, the steps and stages it records, and the window of each stage in
 * strategy_stage.max_parallel. More variants run in process in test/cli/strategy.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Fixture, json, makeFleet, stageWindows, withSql } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let fx: Fixture;
beforeAll(() => {
  fx = new Fixture(makeFleet);
});
afterAll(() => fx.cleanup());

type Step = { cloud: string; 'stage number': number; state: string };

function create(db: string, ...args: string[]): void {
  dcmQuickOk(['--db', db, 'strategy', 'create', ...args]);
}
function steps(db: string): [string, number, string][] {
  // dcm's stage number is its own column, named with -c (the list's `stage` is the server's word).
  return json<Step[]>(dcmQuickOk(['--db', db, 'strategy-step', 'list', '-f', 'json', '-c', 'cloud', '-c', 'state', '-c', 'stage number'])).map((s) => [s.cloud, s['stage number'], s.state]);
}

describe('strategy create --type patch on the example fleet', () => {
  test('s1 in stage 1, s4 in stage 2, s6 s7 s8 in stage 3; windows 2, 3, 1', async () => {
    const { db } = fx.fresh();
    create(db, '--type', 'patch');
    expect(steps(db)).toEqual([
      ['s1', 1, 'initial'],
      ['s4', 2, 'initial'],
      ['s6', 3, 'initial'],
      ['s7', 3, 'initial'],
      ['s8', 3, 'initial'],
    ]);
    expect(await stageWindows(db)).toEqual([
      [1, 2],
      [2, 3],
      [3, 1],
    ]);
    // Steps are stored with stage and attempt 0, in stage order.
    const rows = await withSql(db, (d) => d.prepare('SELECT stage, state, attempt FROM strategy_step ORDER BY id').all());
    expect(rows).toEqual([
      { stage: 1, state: 'initial', attempt: 0 },
      { stage: 2, state: 'initial', attempt: 0 },
      { stage: 3, state: 'initial', attempt: 0 },
      { stage: 3, state: 'initial', attempt: 0 },
      { stage: 3, state: 'initial', attempt: 0 },
    ]);
  });

  test('--group rest: s6..s8 in stage 1, window 1', async () => {
    const { db } = fx.fresh();
    create(db, '--type', 'patch', '--group', 'rest');
    expect(steps(db)).toEqual([
      ['s6', 1, 'initial'],
      ['s7', 1, 'initial'],
      ['s8', 1, 'initial'],
    ]);
    expect(await stageWindows(db)).toEqual([[1, 1]]);
  });

  test('s4 alone: one step, one stage with its group window', async () => {
    const { db } = fx.fresh();
    create(db, '--type', 'patch', 's4');
    expect(steps(db)).toEqual([['s4', 1, 'initial']]);
    expect(await stageWindows(db)).toEqual([[1, 3]]);
  });
});

describe('aliases', () => {
  test('the aliases plan the same steps: fw-update-strategy create ≡ strategy create --type firmware', async () => {
    const a = fx.fresh();
    const b = fx.fresh();
    create(a.db, '--type', 'firmware', '--group', 'canary');
    dcmQuickOk(['--db', b.db, 'fw-update-strategy', 'create', '--group', 'canary']);
    expect(steps(b.db)).toEqual(steps(a.db));
    expect(await stageWindows(b.db)).toEqual(await stageWindows(a.db));
    expect(dcmQuick(['--db', b.db, 'strategy', 'show', '-f', 'value', '-c', 'strategy type']).stdout).toBe('firmware\n');
  });
});
