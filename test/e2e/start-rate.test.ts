/**
 * The start rate (`--start-rate N/min --ramp F --ramp-after K`, `strategy update --start-rate`),
 * proven from the history: the starts of every subcloud's first state, against the rate in force
 * at each (the create's rate, ramped by the sites complete by then, then the update's), checked by
 * the invariant the simulator uses (domain/start-rate.ts startRateViolations). The window alone
 * would start the whole fleet at once: the rate is what spaces them.
 */
import { describe, expect, test } from '@jest/globals';
import { rampSchedule, startRateViolations, type StartRate } from '../../src/domain/start-rate.js';
import { statesOf } from '../../src/domain/types.js';
import { dcm, waitFor } from '../helpers/cli.js';
import { json } from '../helpers/fleet.js';
import { createFleet, history, micros, names, spawnDcm, steps, tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';
import { run as inProcess } from '../helpers/inprocess.js';

const FIRST = statesOf('patch')[0];
const temp = tempPerTest();

/** Each subcloud's first start (the run of its first state, attempt 1), in ms. */
function firstStarts(db: string): { cloud: string; atMs: number }[] {
  return history(db)
    .filter((r) => r.state === FIRST && r.attempt === 1)
    .map((r) => ({ cloud: r.cloud, atMs: micros(r.started_at) / 1000 }));
}

describe('strategy create --start-rate with a ramp, and strategy update --start-rate mid-rollout', () => {
  test('no start over the rate in force; the ramp speeds the starts up, the update slows them down', async () => {
    const { db } = temp();
    const clouds = names(20);
    const created: StartRate = { perMin: 120, factor: 2, after: 4 };
    // A window of the whole fleet, sites that take 150 ms: without the rate every site would start at once.
    createFleet(db, clouds, ['--max-parallel-subclouds', '20', '--sim-latency', '30ms', '--start-rate', '120/min', '--ramp', '2', '--ramp-after', '4']);
    const createdAt = micros(json<{ created_at: string }>(dcmQuickOk(['--db', db, 'strategy', 'show', '-f', 'json'])).created_at) / 1000;
    const shown = json<Record<string, unknown>>(dcmQuickOk(['--db', db, 'strategy', 'status', '-f', 'json']));
    expect(shown['start rate']).toBe('120/min (120/min x2 every 4 complete)');

    const apply = spawnDcm(['--db', db, 'strategy', 'apply', '-v']);
    // Once 8 have started (the ramp has moved by then: 4 are complete): the rate goes down to 120/min. The
    // update goes through the CLI in this process, to land well before the fleet has started.
    await waitFor(() => (apply.stderr().match(/initial -> pre check/g) ?? []).length >= 8, 60_000, 5);
    const upd = await inProcess(['--db', db, 'strategy', 'update', '--start-rate', '120/min', '-f', 'json']);
    expect([upd.code, upd.stderr]).toEqual([0, '']);
    const updatedAt = micros(json<{ updated_at: string }>(upd).updated_at) / 1000;
    const status = json<Record<string, unknown>>(dcmQuickOk(['--db', db, 'strategy', 'status', '-f', 'json']));
    expect(status['start rate']).toBe('120/min');
    const r = await apply.done;
    expect(r.code).toBe(0);

    const starts = firstStarts(db);
    expect(starts.map((s) => s.cloud).sort()).toEqual([...clouds].sort());
    const completed = steps(db).filter((s) => s.state === 'complete').map((s) => micros(s.finished_at!) / 1000);
    const schedule = rampSchedule(
      [
        { atMs: createdAt, rate: created },
        { atMs: updatedAt, rate: { perMin: 120, factor: 1, after: null } },
      ],
      completed,
    );
    expect(startRateViolations(starts, schedule)).toEqual([]);

    // It did brake: the first starts were 500 ms apart at 120/min, the starts after the update 500 ms.
    const sorted = starts.map((s) => s.atMs).sort((a, b) => a - b);
    expect(sorted[1] - sorted[0]).toBeGreaterThanOrEqual(500);
    const after = sorted.filter((t) => t > updatedAt);
    expect(after.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < after.length; i++) expect(after[i] - after[i - 1]).toBeGreaterThanOrEqual(500);
    // The ramp moved before the update: some two starts before it were closer than 500 ms.
    const before = sorted.filter((t) => t < updatedAt);
    expect(before.some((t, i) => i > 0 && t - before[i - 1] < 500)).toBe(true);
    // The report says the rate each stage ran with, and the rate in force at the end.
    const html = dcmQuickOk(['--db', db, 'strategy', 'report', '--html', '-']).stdout;
    expect(html).toContain('120/min; in force at the end: 120/min');
    // The check can fail: the same starts judged at one start every 10 s are violations.
    expect(startRateViolations(starts, [{ fromMs: 0, perMin: 6 }]).length).toBeGreaterThan(0);
  }, 120_000);

  test('bad values are usage errors naming the option, and nothing is written', () => {
    const { db } = temp();
    dcmQuickOk(['--db', db, 'subcloud', 'add', 's1']);
    const bad = (args: string[], message: RegExp) => {
      const r = dcm(['--db', db, 'strategy', 'create', '--type', 'patch', ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toMatch(message);
    };
    bad(['--start-rate', '10'], /^error: invalid --start-rate '10': give starts per minute, as 10\/min/);
    bad(['--start-rate', '10/min', '--ramp', '2'], /^error: --ramp FACTOR and --ramp-after K go together/);
    bad(['--ramp', '2', '--ramp-after', '4'], /^error: --ramp and --ramp-after need --start-rate/);
    bad(['--start-rate', '10/min', '--ramp', '0', '--ramp-after', '4'], /^error: invalid --ramp '0'/);
    expect(dcm(['--db', db, 'strategy', 'show']).code).toBe(1);
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--start-rate', '2/s']);
    const u = dcm(['--db', db, 'strategy', 'update', '--start-rate', 'fast']);
    expect(u.code).toBe(2);
    expect(u.stderr.trim()).toMatch(/^error: invalid --start-rate 'fast'.*none removes the rate$/);
    dcmQuickOk(['--db', db, 'strategy', 'update', '--start-rate', 'none']);
    expect(json<Record<string, unknown>>(dcmQuickOk(['--db', db, 'strategy', 'status', '-f', 'json']))['start rate']).toBeNull();
  });

  test("a group's default rate is its stage's, unless create gives one; an update of stage K changes that stage only", () => {
    const { db } = temp();
    const g = dcm(['--db', db, 'subcloud-group', 'add', '--name', 'canary', '--start-rate', '6/min', '--ramp', '3', '--ramp-after', '1']);
    expect(g.code).toBe(0);
    expect(g.stderr).toContain('start rate default of group canary: 6/min x3 every 1 complete');
    dcmQuickOk(['--db', db, 'subcloud', 'add', 'c1', 'c2', '--group', 'canary']);
    dcmQuickOk(['--db', db, 'subcloud', 'add', 'd1', 'd2']);
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch']);
    const rateOf = () => json<Record<string, unknown>>(dcmQuickOk(['--db', db, 'strategy', 'status', '-f', 'json']))['start rate'];
    // Stage 1 is Default's (id 1), which has none; canary's is stage 2's.
    expect(rateOf()).toBeNull();
    dcmQuickOk(['--db', db, 'strategy', 'update', '--stage', '1', '--start-rate', '30/h']);
    expect(rateOf()).toBe('0.5/min');
    dcmQuickOk(['--db', db, 'strategy', 'delete', '--yes']);
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--group', 'canary']);
    expect(rateOf()).toBe('6/min (6/min x3 every 1 complete)');
    dcmQuickOk(['--db', db, 'strategy', 'delete', '--yes']);
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--group', 'canary', '--start-rate', '1/s']);
    expect(rateOf()).toBe('60/min');
    dcmQuickOk(['--db', db, 'subcloud-group', 'update', 'canary', '--start-rate', 'none']);
  });
});
