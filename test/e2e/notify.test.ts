/**
 * Issue 34, item 7: a word a pager or a chat can hear. The strategy's on_event command (`--on-event`
 * for the sim, `on_event` in the exec config) is run with the event as JSON on stdin when a stage is
 * held and when the strategy ends complete or failed; a command that fails never stops the rollout
 * and is itself recorded (`notification failed`) and said on stderr.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, waitFor } from '../helpers/cli.js';
import { spawnDcm, tempPerTest } from '../helpers/history.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

function canaryFleet(db: string): void {
  dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'canary']);
  dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'fleet']);
  dcmQuickOk(['--db', db, 'subcloud', 'add', 'c1', '--group', 'canary']);
  dcmQuickOk(['--db', db, 'subcloud', 'add', 'f1', 'f2', '--group', 'fleet']);
}

const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : []);

describe('on_event', () => {
  test('the sim: told of the stage held at its gate, then of the strategy complete, once each', async () => {
    const t = temp();
    const out = path.join(t.dir, 'told.jsonl');
    canaryFleet(t.db);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--stage-gate', 'pause', '--on-event', `cat >> '${out}'`]);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => lines(out).length === 1, 30_000, 50);
    const held = lines(out)[0];
    expect(held).toMatchObject({ notice: 'stage held', event: 'stage gate', strategy: { type: 'patch' } });
    expect(held.details).toMatch(/^stage 1: paused: stage 1 ended \(gate pause\)/);
    dcmQuickOk(['--db', t.db, 'strategy', 'resume']);
    expect((await apply.done).code).toBe(0);
    expect(lines(out).map((l) => [l.notice, l.details])).toEqual([
      ['stage held', held.details],
      ['strategy complete', 'complete (exit 0)'],
    ]);
  }, 60_000);

  test('a command that fails: the rollout goes on to its end, the failure recorded and said', async () => {
    const t = temp();
    canaryFleet(t.db);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--sim-fail', 'f2=pre check',
      '--on-event', 'cat > /dev/null; echo "pager: no route" >&2; exit 3']);
    const r = dcm(['--db', t.db, 'strategy', 'apply']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/notification failed: on_event for strategy failed \(\S+ \S+\): exit 3: pager: no route/);
    const steps = JSON.parse(dcmQuickOk(['--db', t.db, 'strategy-step', 'list', '-f', 'json']).stdout) as { cloud: string; state: string }[];
    expect(steps.map((s) => [s.cloud, s.state])).toEqual([['c1', 'complete'], ['f1', 'complete'], ['f2', 'failed']]);
    const events = JSON.parse(dcmQuickOk(['--db', t.db, 'strategy', 'events', '-f', 'json']).stdout) as { event: string; details: string }[];
    expect(events.map((e) => e.event)).toEqual(['apply started', 'apply ended', 'notification failed']);
    expect(events[2].details).toMatch(/^on_event for strategy failed \(.*\): exit 3: pager: no route$/);
  }, 60_000);

  test('the exec config: on_event checked at create, run in the config\'s folder', () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1']);
    const cfg = path.join(t.dir, 'site.yaml');
    fs.writeFileSync(cfg, 'on_event: [sh, -c, "cat > told.json"]\nstates:\n  "*": ["true"]\n');
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    expect(dcm(['--db', t.db, 'strategy', 'apply']).code).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(t.dir, 'told.json'), 'utf8'))).toMatchObject({ notice: 'strategy complete', details: 'complete (exit 0)' });
    dcmQuickOk(['--db', t.db, 'strategy', 'delete']);
    fs.writeFileSync(cfg, 'on_event: 3\nstates:\n  "*": ["true"]\n');
    const bad = dcmQuick(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    expect([bad.code, bad.stderr]).toEqual([2, `error: exec config ${cfg}: on_event: expected a command: a string (run by /bin/sh -c) or a list (run directly)\n`]);
    fs.writeFileSync(cfg, 'states:\n  "*": ["true"]\n');
    const both = dcmQuick(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg, '--on-event', 'true']);
    expect([both.code, both.stderr]).toEqual([2, 'error: --on-event is for the sim driver: give the exec config an on_event\n']);
  });
});

/**
 * Issue 49, item 6: on_event hears a site deferred, an abort, the strategy aborted, and an
 * orchestrator found dead (by `strategy status`, told once, and by the apply that takes its lock
 * over); with no orchestrator running, the abort command tells it itself. (A run held unknown:
 * test/pg/workers.test.ts, several hosts.)
 */
describe('on_event: deferral, abort, an orchestrator found dead', () => {
  const told = (file: string) => lines(file).map((l) => [l.notice, l.details, l.reason ?? null]);

  test('a site that does not answer: its first deferral is told, then the strategy failed', () => {
    const t = temp();
    const out = path.join(t.dir, 'told.jsonl');
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's2', '--label', 'sim_unreachable=yes']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '20ms', '--defer-delay', '50ms', '--on-event', `cat >> '${out}'`]);
    expect(dcm(['--db', t.db, 'strategy', 'apply']).code).toBe(1);
    const notices = told(out);
    expect(notices.map((n) => n[0])).toEqual(['deferred', 'strategy failed']);
    expect(notices[0][1]).toBe("s2: pre check: no answer (label sim_unreachable); deferred (1), tried again in 50ms");
  }, 60_000);

  test('an abort from another shell: told with its reason, then the strategy aborted', async () => {
    const t = temp();
    const out = path.join(t.dir, 'told.jsonl');
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3', 's4']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1', '--sim-latency', '300ms', '--on-event', `cat >> '${out}'`]);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => dcmQuickOk(['--db', t.db, 'strategy-step', 'list', '-f', 'value', '-c', 'state']).stdout.includes('pre check'), 30_000, 50);
    expect(dcm(['--db', t.db, 'strategy', 'abort', '--reason', 'alarms on s1']).code).toBe(0);
    expect((await apply.done).code).toBe(3);
    const notices = told(out);
    expect(notices.map((n) => n[0])).toEqual(['abort', 'strategy aborted']);
    expect(notices[0][2]).toBe('alarms on s1');
    expect(notices[1][1]).toBe('aborted (exit 3)');
  }, 60_000);

  test('kill -9 of apply: status tells the orchestrator dead once; the abort with none running tells itself; the next apply tells its takeover', async () => {
    const t = temp();
    const out = path.join(t.dir, 'told.jsonl');
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3', 's4']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1', '--sim-latency', '300ms', '--on-event', `cat >> '${out}'`]);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => dcmQuickOk(['--db', t.db, 'strategy-step', 'list', '-f', 'value', '-c', 'state']).stdout.includes('pre check'), 30_000, 50);
    apply.child.kill('SIGKILL');
    await apply.done;
    const first = dcm(['--db', t.db, 'strategy', 'status', '-f', 'value', '-c', 'state']);
    expect([first.code, first.stdout, first.stderr]).toEqual([0, 'applying\n', '']);
    expect(dcm(['--db', t.db, 'strategy', 'status']).code).toBe(0);
    expect(told(out).map((n) => n[0])).toEqual(['orchestrator dead']);
    expect(told(out)[0][1]).toMatch(/^pid \d+ on \S+ \(applying since .*\) is gone; the strategy was left applying: `dcm strategy apply` takes it up$/);
    // The next apply takes the lock over: that death, as it found it, is told too.
    const again = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => lines(out).length === 2, 30_000, 50);
    again.child.kill('SIGKILL');
    await again.done;
    expect(told(out)[1][0]).toBe('orchestrator dead');
    expect(told(out)[1][1]).toMatch(/no longer running/);
    // No orchestrator runs now: the abort command tells it.
    expect(dcm(['--db', t.db, 'strategy', 'abort', '--reason', 'rollback']).code).toBe(0);
    expect(told(out).slice(2).map((n) => [n[0], n[2]])).toEqual([['abort', 'rollback']]);
  }, 60_000);
});
