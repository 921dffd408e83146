/** The README's main command (`npm run demo`) runs a whole simulated rollout and shows the steps. */
import { expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { tempPerTest } from '../helpers/history.js';

const temp = tempPerTest();

test('examples/rollout.sh: 300 subclouds in four groups, canary first, one injected failure; ends with the summary and the failures', () => {
  const t = temp();
  const r = spawnSync('bash', [path.join(ROOT, 'examples', 'rollout.sh')], {
    env: { ...process.env, DCM_DB: t.db },
    encoding: 'utf8',
    timeout: 110_000,
  });
  expect(r.status).toBe(0);
  // The groups that hold subclouds, as the README says (the empty Default is not one of them).
  expect(r.stdout).toContain('== fleet: 300 subclouds in 4 groups\n');
  // The exit code in words, not beside a list of numbers that reads like counts.
  expect(r.stdout).toContain('== strategy apply exited 1: the strategy failed\n');
  expect(r.stdout).not.toMatch(/exited \d+ \(/);
  // 300 subclouds less 2 offline, 1 unmanaged and 2 in-sync: 295 steps, all but one complete.
  expect(r.stdout).toMatch(/\| complete +\| 294 +\|/);
  expect(r.stdout).toMatch(/\| failed +\| 1 +\|/);
  // It ends with the one failure, with dcmanager's details form `<state>: <reason>`, not a wall of rows.
  expect(r.stdout).toMatch(/== the failed steps[^\n]*:\n\+[-+]+\n\| cloud +\| state +\| details +\| finished_at +\| stage number \|\n\+[-+]+\n\| east042 \| failed\s+\| applying VIM patch strategy: injected failure \| [^|]+\|\s+2 \|\n\+[-+]+\n$/);
  expect(r.stdout).not.toMatch(/\| complete +\| None/);
  // The closing summary on stderr names the failure.
  expect(r.stderr).toMatch(/strategy failed: 294 complete, 1 failed in [^\n]+\nfailed subclouds \(1\):\n {2}east042: applying VIM patch strategy: injected failure\n/);
  // The canary group, created first, is stage 1.
  const stage1 = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'dcm.js'), '--db', t.db, 'strategy-step', 'list', '--stage', '1', '-f', 'value', '-c', 'cloud'], {
    encoding: 'utf8',
  });
  expect(stage1.stdout.trim().split('\n')).toEqual(Array.from({ length: 10 }, (_, i) => `canary${i + 1}`));
});
