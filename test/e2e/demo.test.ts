/** The README's main command (`npm run demo`) runs a whole simulated rollout and shows the steps. */
import { afterEach, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT, tempDir } from '../helpers/cli.js';

let cleanup = () => {};
afterEach(() => cleanup());

test('examples/rollout.sh: 300 subclouds in four groups, canary first, one injected failure, the step list at the end', () => {
  const t = tempDir();
  cleanup = t.cleanup;
  const r = spawnSync('bash', [path.join(ROOT, 'examples', 'rollout.sh')], {
    env: { ...process.env, DCM_DB: t.db },
    encoding: 'utf8',
    timeout: 110_000,
  });
  expect(r.status).toBe(0);
  expect(r.stdout).toContain('== fleet: 300 subclouds in 5 groups');
  expect(r.stdout).toContain('strategy apply exited 1');
  // The one failure, with dcmanager's details form `<state>: <reason>`.
  expect(r.stdout).toMatch(/\| east042 \|\s+2 \| failed\s+\| applying VIM patch strategy: injected failure \|/);
  // The canary group, created first, is stage 1.
  expect(r.stdout).toMatch(/\| canary1 +\| +1 \| complete/);
  // 300 subclouds less 2 offline, 1 unmanaged and 2 in-sync: 295 steps, all but one complete.
  const rows = r.stdout.split('\n').filter((l) => /^\| \S+ +\| +\d+ \| complete /.test(l));
  expect(rows).toHaveLength(294);
  expect(r.stderr).toMatch(/strategy failed: 294 complete, 1 failed in /);
});
