/**
 * Issue 34, item 5: `strategy status` reads right at 3 a.m. The stage row says the stage is held
 * and by what (a gate after the stage before, a maintenance window) rather than a bare `2 of 2`;
 * the ETA includes a known wait (a soak's rest, a window's opening) or says what it waits for;
 * deferred sites are named with their next try.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { waitFor } from '../helpers/cli.js';
import { spawnDcm, tempPerTest } from '../helpers/history.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();
type Status = Record<string, string | number | null>;

function status(db: string, env: Record<string, string> = {}): Status {
  const r = dcmQuick(['--db', db, 'strategy', 'status', '-f', 'json'], { env });
  if (r.code !== 0) throw new Error(`status exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Status;
}

describe('strategy status: what holds the rollout', () => {
  test('a soak after the canary: the stage row says held by its gate, the ETA includes the soak', async () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'canary']);
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'fleet', '--max_parallel_subclouds', '3']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'c1', '--group', 'canary']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'f1', 'f2', 'f3', '--group', 'fleet']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '1s', '--stage-gate', 'soak=2h']);
    const apply = spawnDcm(['--db', t.db, '-q', 'strategy', 'apply']);
    let s: Status = {};
    await waitFor(() => String((s = status(t.db)).stage).includes('held'), 60_000, 100);
    expect(s.stage).toMatch(/^2 of 2, held by stage 1's gate: soaking, (2h00m|1h59m) left$/);
    expect(s.window).toBe(3);
    // The rest (one wave of 5 states of 1 s) after a soak of nearly 2 h: the ETA is over 2 h, and says why.
    expect(s.eta).toMatch(/^2h00m \(includes (2h00m|1h59m) waiting for the soak after stage 1\)$/);
    apply.child.kill('SIGTERM');
    expect((await apply.done).code).toBe(143);
  }, 90_000);

  test('a site that does not answer: named with its next try', async () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's1', '--label', 'sim_unreachable=yes']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--defer-delay', '1h', '--defer-until', '3h']);
    const apply = spawnDcm(['--db', t.db, '-q', 'strategy', 'apply']);
    let s: Status = {};
    await waitFor(() => (s = status(t.db)).deferred === 1 && s.complete === 1, 60_000, 100);
    expect(s['deferred sites']).toMatch(/^s1: pre check, try 2 at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in (1h00m|59m\d\ds)\)$/);
    // Issue 49: the deferral is a known wait: the rollout ends no sooner than the site's next try.
    expect(s.eta).toMatch(/^(1h00m|59m\d\ds) \(waits for a deferred site's next try at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)$/);
    apply.child.kill('SIGTERM');
    expect((await apply.done).code).toBe(143);
  }, 90_000);

  // Issue 49, item 7: one estimator. The live view (here its periodic line off a terminal) said
  // `ETA 21s` while status said `1h12m`; now both say the window's wait, in the same words.
  test('apply\'s progress and status give the same ETA: a maintenance window, a deferral, a pause', async () => {
    const t = temp();
    const env = { DCM_TEST_HOOKS: '1', DCM_TEST_CLOCK: '2026-12-05T20:00:00Z' };
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'd1', 'd2']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'n1', 'n2', '--group', 'night']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '200ms']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply', '--progress-interval', '200ms'], env);
    const lastEta = () => / ETA (.+)$/.exec(apply.stderr().split('\n').filter((l) => / progress: /.test(l)).pop() ?? '')?.[1] ?? '';
    // Stage 1 done, stage 2 waits for its window: the view says so, as status does.
    await waitFor(() => /waiting for maintenance window Sat 22:00-Sun 06:00 \(UTC\)/.test(lastEta()), 60_000, 50);
    const s = status(t.db, env);
    expect(s.eta).toMatch(/^(2h00m|1h59m) \(includes (2h00m|1h59m|1h58m) waiting for maintenance window Sat 22:00-Sun 06:00 \(UTC\)\)$/);
    expect(lastEta()).toMatch(/^(2h00m|1h59m) \(includes (2h00m|1h59m|1h58m) waiting for maintenance window Sat 22:00-Sun 06:00 \(UTC\)\)( \(from \S.*\))?$/);
    // Paused: only the operator ends it, and both say so.
    expect(dcmQuick(['--db', t.db, 'strategy', 'pause']).code).toBe(0);
    await waitFor(() => lastEta().startsWith('waits for the operator (paused): '), 30_000, 50);
    expect(status(t.db, env).eta).toMatch(/^waits for the operator \(paused\): .* once resumed$/);
    apply.child.kill('SIGTERM');
    expect((await apply.done).code).toBe(143);
  }, 90_000);

  test('a group whose maintenance window is closed: held by it, the ETA includes the wait until it opens', () => {
    const t = temp();
    const env = { DCM_TEST_HOOKS: '1', DCM_TEST_CLOCK: '2026-12-05T20:00:00Z' };
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'night', '--maintenance-window', 'Sat 22:00-Sun 06:00']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'n1', 'n2', '--group', 'night']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '1s']);
    const s = status(t.db, env);
    expect(s.stage).toBe('1 of 1, held by maintenance window Sat 22:00-Sun 06:00 (UTC) (group night), opens 2026-12-05T22:00:00.000Z');
    expect(s.eta).toMatch(/^2h00m \(includes (2h00m|1h59m) waiting for maintenance window Sat 22:00-Sun 06:00 \(UTC\)\)$/);
    expect(s['deferred sites']).toBeNull();
    // The report says the same (issue 49: one estimator).
    const html = path.join(t.dir, 'report.html');
    dcmQuickOk(['--db', t.db, 'strategy', 'report', '--html', html], { env });
    expect(fs.readFileSync(html, 'utf8')).toMatch(/<dt>time left<\/dt><dd data-key="eta">2h00m \(includes (2h00m|1h59m) waiting for maintenance window Sat 22:00-Sun 06:00 \(UTC\)\)<\/dd>/);
  });
});
