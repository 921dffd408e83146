/**
 * Progress from inside a run (issue 19): a run's progress lines become its step's details while it
 * runs, written only when they change, at most once a second per subcloud, in the orchestrator's
 * own commits; a line of a run that has ended, or of an earlier attempt, never lands on a later
 * state's details. The batcher on a clock of the test's own, then the orchestrator with a fake
 * driver whose runs report by hand.
 */
import { REAL_TIMERS } from '../../src/platform/timers.js';
import { afterEach, describe, expect, test } from '@jest/globals';
import { DETAILS_EVERY_MS, RunDetails } from '../../src/orchestrator/run-details.js';
import type { CostCounters } from '../../src/orchestrator/test-hooks.js';
import { FakeDriver, fixture, RecordingProgress, settle, stepDetails, stepStates, type Fixture } from '../helpers/orchestrator.js';
import { waitFor } from '../helpers/cli.js';

let f: Fixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

describe('RunDetails: the pace of details writes', () => {
  test('1,000 lines within a second are one write; the next waits out the second; an equal line is no change', () => {
    let now = 10_000;
    const d = new RunDetails(() => {}, () => now, REAL_TIMERS);
    const current = () => true;
    const writes: string[] = [];
    const flushAll = () => {
      const lines = d.take(current);
      writes.push(...lines.map((l) => l.text));
      d.committed(lines, false);
    };
    for (let i = 1; i <= 1000; i++) {
      d.report(1, 7, `deploy phase is ${i / 10}% complete`);
      // A commit of transitions every line: each may carry the line, only one a second does.
      flushAll();
      now += 0.5;
    }
    expect(writes).toEqual(['deploy phase is 0.1% complete']);
    now = 10_000 + DETAILS_EVERY_MS;
    flushAll();
    expect(writes).toEqual(['deploy phase is 0.1% complete', 'deploy phase is 100% complete']);
    // The same line again is no change: nothing to write, even a second later.
    d.report(1, 7, 'deploy phase is 100% complete');
    now += 5 * DETAILS_EVERY_MS;
    flushAll();
    expect(writes).toHaveLength(2);
    d.stop();
  });

  test('a line of a run no longer current is dropped, and a new run of the step is not held to the old one\'s pace', () => {
    let now = 0;
    const d = new RunDetails(() => {}, () => now, REAL_TIMERS);
    d.report(1, 1, 'attempt 1 at 50%');
    d.committed(d.take(() => true), false);
    d.report(1, 1, 'attempt 1 at 99%');
    // Run 1 ended and run 2 of the same step is in flight: run 1's line goes, never written.
    expect(d.take((_, op) => op === 2)).toEqual([]);
    expect(d.take(() => true)).toEqual([]);
    d.report(1, 2, 'attempt 2 at 10%');
    now += 1;
    expect(d.take((_, op) => op === 2).map((l) => l.text)).toEqual(['attempt 2 at 10%']);
    d.stop();
  });
});

function counters(): CostCounters {
  return { commits: 0, transitions: 0, statements: 0, details: 0, autocommitReads: 0 };
}

describe('Orchestrator: progress lines as details', () => {
  test('the latest line shows while the run goes on; the result replaces it; a late line of the ended run changes nothing', async () => {
    f = await fixture({ clouds: ['s1', 's2'], window: 2 });
    const driver = new FakeDriver(() => 'hold');
    const progress = new RecordingProgress();
    const seen = progress.progressLines;
    const cost = counters();
    const done = f.make(driver, progress, { counters: cost }).run();
    await settle();
    const first = driver.waiting('s1')!;
    first.req.onProgress!('phase is 10% complete');
    first.req.onProgress!('phase is 20% complete');
    await waitFor(async () => (await stepDetails(f!.db)).s1 === 'phase is 20% complete', 10_000, 5);
    expect(seen).toEqual(['s1: phase is 20% complete']);
    // The run's last line and its result in the same turn: the result wins, the line is dropped.
    first.req.onProgress!('phase is 100% complete');
    first.answer({ kind: 'next' });
    await waitFor(() => driver.waiting('s1') !== undefined && driver.waiting('s1') !== first, 10_000, 5);
    const second = driver.waiting('s1')!;
    expect(second.req.state).toBe(f.states[1]);
    expect((await stepDetails(f.db)).s1).toBe('');
    // The ended run speaks again (a driver that reports late) as s2's run reports: s2's line is
    // committed by the commit that would carry s1's, had it been taken.
    first.req.onProgress!('late line of an ended run');
    driver.waiting('s2')!.req.onProgress!('s2 at 50%');
    await waitFor(async () => (await stepDetails(f!.db)).s2 === 's2 at 50%', 10_000, 5);
    expect((await stepDetails(f.db)).s1).toBe('');
    second.req.onProgress!('second state started');
    await waitFor(async () => (await stepDetails(f!.db)).s1 === 'second state started', 10_000, 5);
    expect(seen).toEqual(['s1: phase is 20% complete', 's2: s2 at 50%', 's1: second state started']);
    for (;;) {
      await settle();
      const c = driver.waiting('s1') ?? driver.waiting('s2');
      if (!c) break;
      c.answer({ kind: 'next' });
    }
    expect(await done).toBe(0);
    expect(await stepStates(f.db)).toEqual({ s1: 'complete', s2: 'complete' });
    expect(await stepDetails(f.db)).toEqual({ s1: '', s2: '' });
    expect(cost.details).toBe(3);
  });

  test('a run that reports nothing costs no details write; a failed run\'s details are its reason', async () => {
    f = await fixture({ clouds: ['s1'], window: 1 });
    const driver = new FakeDriver(() => 'hold');
    const cost = counters();
    const done = f.make(driver, new RecordingProgress(), { counters: cost }).run();
    await settle();
    const run = driver.waiting('s1')!;
    run.req.onProgress!('halfway');
    await waitFor(async () => (await stepDetails(f!.db)).s1 === 'halfway', 10_000, 5);
    run.answer({ kind: 'failed', reason: 'exit 1: broken' });
    expect(await done).toBe(1);
    expect((await stepDetails(f.db)).s1).toBe(`${f.states[0]}: exit 1: broken`);
    expect(cost.details).toBe(1);
  });
});
