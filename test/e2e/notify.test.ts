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
