/**
 * Maintenance windows end to end (README "Rolling out safely", "Maintenance windows"): the built
 * dcm, real SQLite files, the exec driver's real state commands judged by their own log (under
 * flock). The window clock is injected (`DCM_TEST_HOOKS=1 DCM_TEST_CLOCK=ISO`: that time when dcm
 * starts, running on at the real pace), so a test stands on a Tuesday or a few seconds before
 * Saturday 22:00 without waiting for either.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { openFile, withChromium } from '../helpers/browser.js';
import { statesOf } from '../../src/domain/types.js';
import { dcm, waitFor } from '../helpers/cli.js';
import { expectRefused, json, withSql } from '../helpers/fleet.js';
import { killLeftovers, spawnDcm, steps } from '../helpers/history.js';
import { execFixture, overlapsPerCloud, peakConcurrent, type ExecFixture } from '../helpers/exec.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const PATCH = statesOf('patch');
let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

const db = () => ['--db', f.db];
const hooks = (iso: string) => ({ DCM_TEST_HOOKS: '1', DCM_TEST_CLOCK: iso });

function execConfig(stepMs: number): string {
  return f.config(`
defaults:
  timeout: 60s
  env: {STEP_MIN_MS: "${stepMs}", STEP_MAX_MS: "${stepMs}"}
states:
  "*": [${f.step}, "{cloud}", "{state}"]
`);
}

function stateOf(cloud: string): string {
  return steps(f.db).find((s) => s.cloud === cloud)!.state;
}

function statusField(field: string, env: Record<string, string>): string {
  return (json<Record<string, string>>(dcmQuickOk([...db(), 'strategy', 'status', '-f', 'json'], { env })))[field];
}

describe('subcloud-group --maintenance-window / --maintenance-tz', () => {
  test('set, normalised, shown by list and show in every format; none clears it', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'sat 22:00-SUN 6:00', '--maintenance-tz', 'Europe/Berlin']);
    const show = json<Record<string, unknown>>(dcmQuickOk([...db(), 'subcloud-group', 'show', 'night', '-f', 'json']));
    expect(show).toMatchObject({ 'maintenance window': 'Sat 22:00-Sun 06:00', 'maintenance tz': 'Europe/Berlin' });
    expect(dcmQuickOk([...db(), 'subcloud-group', 'list', '-f', 'csv']).stdout).toBe(
      '"id","name","description","maintenance window"\n' +
        '1,"Default","Default Subcloud Group",""\n' +
        '2,"night","No description provided","Sat 22:00-Sun 06:00 (Europe/Berlin)"\n',
    );
    expect(dcmQuickOk([...db(), 'subcloud-group', 'list', '-f', 'value', '-c', 'maintenance window']).stdout).toBe('None\nSat 22:00-Sun 06:00 (Europe/Berlin)\n');
    dcmQuickOk([...db(), 'subcloud-group', 'update', 'night', '--maintenance-window', '22:00-06:00, Sun 10:00-Sun 12:00', '--maintenance-tz', 'UTC']);
    expect(dcmQuickOk([...db(), 'subcloud-group', 'show', 'night', '-f', 'value', '-c', 'maintenance window', '-c', 'maintenance tz']).stdout).toBe(
      '22:00-06:00, Sun 10:00-Sun 12:00\nUTC\n',
    );
    dcmQuickOk([...db(), 'subcloud-group', 'update', 'night', '--maintenance-window', 'none']);
    // Without any window, exactly dcmanager's columns and fields.
    expect(dcmQuickOk([...db(), 'subcloud-group', 'list', '-f', 'csv']).stdout).toBe(
      '"id","name","description"\n1,"Default","Default Subcloud Group"\n2,"night","No description provided"\n',
    );
    expect(Object.keys(json<Record<string, unknown>>(dcmQuickOk([...db(), 'subcloud-group', 'show', 'night', '-f', 'json'])))).not.toContain('maintenance window');
  });

  test('a bad window or zone: one line naming it, exit 2, the file unchanged', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night']);
    const upd = (...a: string[]) => [...db(), 'subcloud-group', 'update', 'night', ...a];
    expectRefused(f.dir, upd('--maintenance-window', 'Sat 25:00-Sun 06:00'), 2, /^invalid --maintenance-window 'Sat 25:00-Sun 06:00': '25:00' is not a time of day/);
    expectRefused(f.dir, upd('--maintenance-window', 'Saturday night'), 2, /^invalid --maintenance-window 'Saturday night': 'Saturday night' is not a span FROM-TO/);
    expectRefused(f.dir, upd('--maintenance-window', 'Sat 22:00-06:00'), 2, /mixes a weekly and a daily span/);
    expectRefused(f.dir, upd('--maintenance-tz', 'Europe/Atlantis'), 2, /^invalid --maintenance-tz 'Europe\/Atlantis': not an IANA time zone/);
    expectRefused(f.dir, [...db(), 'subcloud-group', 'add', '--name', 'other', '--maintenance-window', '1-2'], 2, /^invalid --maintenance-window '1-2'/);
    // The clock hook is a test hook only.
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
    expectRefused(f.dir, [...db(), 'strategy', 'apply'], 2, 'DCM_TEST_CLOCK is a test hook: it needs DCM_TEST_HOOKS=1', { env: { DCM_TEST_CLOCK: '2026-12-05T22:00:00Z' } });
  });
});

describe('strategy create --dry-run with maintenance windows', () => {
  test('a later stage waits for its window: its estimate counts the wait from its own start, and says when it opens', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 'd1', 'd2', 'd3']);
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'w1', 'w2', '--group', 'night']);
    const plan = (iso: string) =>
      json<{ stage: number | string; 'estimated duration': string }[]>(
        dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--sim-latency', '1s', '--dry-run', '-f', 'json'], { env: hooks(iso) }),
      ).map((r) => [r.stage, r['estimated duration']]);
    expect(PATCH).toHaveLength(5);
    const waves = '10s';
    // An hour before the window: stage 1 takes two waves of 5 states of 1 s; stage 2 waits for the rest of the hour.
    expect(plan('2026-12-05T21:00:00Z')).toEqual([
      [1, waves],
      // From 10 s: the wait to 3600 s, then one wave of 5 s.
      [2, '59m55s (window opens 2026-12-05T22:00:00.000Z)'],
      ['total', '1h00m'],
    ]);
    // Inside the window: no wait. (And nothing was written: no strategy.)
    expect(plan('2026-12-05T23:00:00Z')).toEqual([[1, waves], [2, '5.0s'], ['total', '15s']]);
    expect(dcmQuick([...db(), 'strategy', 'show']).code).toBe(1);
  });
});

describe('apply with maintenance windows (exec driver, one stage of named subclouds, window 2)', () => {
  test('windows past and future: their subclouds do not start, the others do, in slots of 2; the apply waits; status says until when; abort ends it at once', async () => {
    f = execFixture();
    // Tuesday 2026-12-01 12:00 UTC: `morning` was open this morning (past), `night` opens on
    // Saturday (future), `noon` is open now; d1 and d2 have no window.
    const env = { ...f.env, ...hooks('2026-12-01T12:00:00Z') };
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'morning', '--maintenance-window', '08:00-09:00']);
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00', '--maintenance-tz', 'Europe/Berlin']);
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'noon', '--maintenance-window', 'Tue 11:00-Tue 13:00']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'p1', '--group', 'morning']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'f1', '--group', 'night']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'n1', 'n2', '--group', 'noon']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'd1', 'd2']);
    // The first in step order are the ones that wait: they must give their places up.
    const order = ['p1', 'f1', 'n1', 'd1', 'n2', 'd2'];
    // (The sim driver's dry run: its latency gives the estimate a source.)
    const dry = dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', ...order, '--max-parallel-subclouds', '2', '--sim-latency', '1s',
      '--dry-run', '-f', 'json'], { env }).stdout;
    // The estimate waits for the last window the stage needs: Saturday 22:00 in Berlin, 105 hours on.
    expect(JSON.parse(dry)[0]['estimated duration']).toMatch(/^105h\d\dm \(window opens 2026-12-05T21:00:00\.000Z\)$/);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', ...order, '--max-parallel-subclouds', '2', '--driver', 'exec', '--exec-config', execConfig(50)]);

    const apply = spawnDcm([...db(), 'strategy', 'apply'], env);
    await waitFor(() => ['n1', 'n2', 'd1', 'd2'].every((c) => stateOf(c) === 'complete'), 60_000);
    // The orchestrator has decided about the two that wait, and said so.
    await waitFor(() => /group night waits/.test(apply.stderr()) && /group morning waits/.test(apply.stderr()), 60_000);
    expect(apply.stderr()).toContain('group morning waits for its maintenance window 08:00-09:00 (UTC): opens 2026-12-02T08:00:00.000Z');
    expect(apply.stderr()).toContain('group night waits for its maintenance window Sat 22:00-Sun 06:00 (Europe/Berlin): opens 2026-12-05T21:00:00.000Z');
    expect(apply.child.exitCode).toBeNull();
    expect(statusField('state', env)).toBe('applying');
    expect(statusField('maintenance', env)).toBe(
      'morning: 1 subcloud(s) wait for maintenance window 08:00-09:00 (UTC), opens 2026-12-02T08:00:00.000Z\n' +
        'night: 1 subcloud(s) wait for maintenance window Sat 22:00-Sun 06:00 (Europe/Berlin), opens 2026-12-05T21:00:00.000Z',
    );
    expect([stateOf('p1'), stateOf('f1')]).toEqual(['initial', 'initial']);

    // Waiting for a window is a timer: an abort from another shell still acts at once.
    dcmQuickOk([...db(), 'strategy', 'abort']);
    const r = await apply.done;
    expect(r.code).toBe(3);
    expect([stateOf('p1'), stateOf('f1')]).toEqual(['aborted', 'aborted']);

    // By the commands' own log: p1 and f1 never ran; the others ran every state once, never more than 2 at once.
    const runs = f.readRuns();
    expect(runs.filter((x) => x.cloud === 'p1' || x.cloud === 'f1')).toEqual([]);
    expect(runs.map((x) => `${x.cloud}/${x.state}`).sort()).toEqual(['n1', 'n2', 'd1', 'd2'].flatMap((c) => PATCH.map((s) => `${c}/${s}`)).sort());
    expect(peakConcurrent(runs)).toBeLessThanOrEqual(2);
    expect(overlapsPerCloud(runs)).toEqual([]);
  });

  test('Ctrl-C while waiting for a window: exit 130, the waiting subclouds stay initial for the next apply', async () => {
    f = execFixture();
    const env = { ...f.env, ...hooks('2026-12-01T12:00:00Z') };
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'w1', 'w2', '--group', 'night']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', execConfig(10)]);
    const apply = spawnDcm([...db(), 'strategy', 'apply'], env);
    await waitFor(() => /group night waits for its maintenance window/.test(apply.stderr()), 60_000);
    apply.child.kill('SIGINT');
    const r = await apply.done;
    expect(r.code).toBe(130);
    expect(statusField('state', env)).toBe('applying');
    expect([stateOf('w1'), stateOf('w2')]).toEqual(['initial', 'initial']);
    expect(f.readRuns()).toEqual([]);
  });

  test('a window changed while the apply waits counts once the apply is paused and resumed', async () => {
    f = execFixture();
    const env = { ...f.env, ...hooks('2026-12-01T12:00:00Z') };
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'w1', 'w2', '--group', 'night']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', execConfig(10)]);
    const apply = spawnDcm([...db(), 'strategy', 'apply'], env);
    await waitFor(() => /group night waits for its maintenance window/.test(apply.stderr()), 60_000);
    const upd = dcmQuickOk([...db(), 'subcloud-group', 'update', 'night', '--maintenance-window', 'Tue 11:00-Tue 13:00', '-f', 'value', '-c', 'maintenance window']);
    expect(upd.stdout).toBe('Tue 11:00-Tue 13:00\n');
    expect(upd.stderr).toBe('warning: a running `dcm strategy apply` reads the maintenance windows as it starts and on `dcm strategy resume`: pause and resume it to have this one count\n');
    dcmQuickOk([...db(), 'strategy', 'pause']);
    await waitFor(() => /dcm: paused/.test(apply.stderr()), 60_000);
    dcmQuickOk([...db(), 'strategy', 'resume']);
    const r = await apply.done;
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('group night: maintenance window Tue 11:00-Tue 13:00 (UTC) is open, its subclouds start');
    expect(f.readRuns()).toHaveLength(2 * PATCH.length);
  });

  // `pause && resume` from a script, both between two looks of the apply (here: while it is
  // stopped): the state is `applying` again when it looks, and the resume's event says it happened
  // (the guide's example waited for ever when both fell between two looks).
  test('a pause and a resume both between two looks of the apply still make it read the windows again', async () => {
    f = execFixture();
    const env = { ...f.env, ...hooks('2026-12-01T12:00:00Z') };
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'w1', '--group', 'night']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', execConfig(10)]);
    const apply = spawnDcm([...db(), 'strategy', 'apply'], env);
    await waitFor(() => /group night waits for its maintenance window/.test(apply.stderr()), 60_000);
    dcmQuickOk([...db(), 'subcloud-group', 'update', 'night', '--maintenance-window', 'none']);
    apply.child.kill('SIGSTOP');
    try {
      dcmQuickOk([...db(), 'strategy', 'pause']);
      dcmQuickOk([...db(), 'strategy', 'resume']);
    } finally {
      apply.child.kill('SIGCONT');
    }
    const r = await apply.done;
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/dcm: paused: [^\n]*\ndcm: resumed\n/);
    expect(f.readRuns()).toHaveLength(PATCH.length);
  });

  test('a window that opens during the apply: the apply sleeps until then, and its subclouds start only from then', async () => {
    f = execFixture();
    // Eight seconds before Saturday 22:00 UTC.
    const env = { ...f.env, ...hooks('2026-12-05T21:59:52Z') };
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'w1', 'w2', 'w3', '--group', 'night']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'd1']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', 'w1', 'w2', 'd1', 'w3', '--max-parallel-subclouds', '2', '--driver', 'exec', '--exec-config', execConfig(20)]);
    const before = Date.now();
    const apply = spawnDcm([...db(), 'strategy', 'apply'], env);
    const r = await apply.done;
    expect(r.stderr).toContain('strategy complete');
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('group night waits for its maintenance window Sat 22:00-Sun 06:00 (UTC): opens 2026-12-05T22:00:00.000Z');
    expect(r.stderr).toContain('group night: maintenance window Sat 22:00-Sun 06:00 (UTC) is open, its subclouds start');

    const runs = f.readRuns();
    // The window opened 8 s after dcm started (itself after `before`): no run of w1..w3 started earlier.
    const opened = before + 8000;
    for (const c of ['w1', 'w2', 'w3']) {
      const first = Math.min(...runs.filter((x) => x.cloud === c).map((x) => x.start / 1e6));
      expect(first).toBeGreaterThanOrEqual(opened);
    }
    // d1, of no window, did not wait for them: it was done before any of them started.
    const d1End = Math.max(...runs.filter((x) => x.cloud === 'd1').map((x) => x.end));
    expect(Math.min(...runs.filter((x) => x.cloud !== 'd1').map((x) => x.start))).toBeGreaterThan(d1End);
    expect(runs).toHaveLength(4 * PATCH.length);
    expect(peakConcurrent(runs)).toBeLessThanOrEqual(2);
    expect(steps(f.db).every((s) => s.state === 'complete')).toBe(true);

    // The wait is in the event record, and the report shows it (issue 34): the window, from when
    // until when, and that the window opened.
    const ev = json<{ event: string; details: string; time: string }[]>(dcmQuickOk([...db(), 'strategy', 'events', '-f', 'json']));
    const wait = ev.find((e) => e.event === 'maintenance wait')!;
    const open = ev.find((e) => e.event === 'maintenance window open')!;
    expect(wait.details).toBe('group night waits for its maintenance window Sat 22:00-Sun 06:00 (UTC): opens 2026-12-05T22:00:00.000Z');
    expect(open.details).toBe('group night: maintenance window Sat 22:00-Sun 06:00 (UTC) is open, its subclouds start');
    const html = path.join(f.dir, 'r.html');
    dcmQuickOk([...db(), 'strategy', 'report', '--html', html]);
    await withChromium(async (browser) => {
      const o = await openFile(browser, html);
      expect(o.errors).toEqual([]);
      const rows = await o.page.evaluate(() => [...document.querySelectorAll('#waits tr.wait')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
      const toSecond = (t: string) => t.slice(0, 19);
      expect(rows).toHaveLength(1);
      expect([rows[0][0], rows[0][1], rows[0][2], rows[0][3], rows[0][5], rows[0][6]]).toEqual([
        'night', 'Sat 22:00-Sun 06:00 (UTC)', toSecond(wait.time), toSecond(open.time), '2026-12-05T22:00:00.000Z', 'the window opened',
      ]);
      expect(Number(rows[0][4]!.replace(' s', ''))).toBeGreaterThanOrEqual(6);
      // Both drawn on the timeline too.
      const marks = await o.page.evaluate(() => [...document.querySelectorAll<SVGGElement>('g.event-mark')].map((g) => g.dataset.event));
      expect(marks).toEqual(expect.arrayContaining(['maintenance wait', 'maintenance window open']));
    });
  });

  test('a subcloud started inside its window runs to its end after the window has closed', async () => {
    f = execFixture();
    // Eight seconds before Sunday 06:00 UTC (dcm starts well inside the window); each state takes
    // 2 s, the five of them 10 s.
    const env = { ...f.env, ...hooks('2026-12-06T05:59:52Z') };
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'w1', '--group', 'night']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', execConfig(2000)]);
    const r = dcm([...db(), 'strategy', 'apply'], { env });
    expect(r.stderr).toContain('strategy complete');
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain('waits for its maintenance window');
    const runs = f.readRuns();
    expect(runs.map((x) => x.state)).toEqual([...PATCH]);
    // dcm read its clock before it started anything, so the window closed at most 8 s after the
    // first state started: the last one ended after that, outside the window.
    expect(runs[runs.length - 1].end - runs[0].start).toBeGreaterThan(8000 * 1e6);
    expect(await withSql(f.db, (d) => d.prepare("SELECT state FROM strategy_step").pluck().get())).toBe('complete');
  });
});
