/**
 * The exec examples run as documented: `npm run demo:exec` (examples/exec/rollout.sh, fake sites
 * driven by shell scripts) and the Ansible example (a playbook limited with -l {cloud}).
 */
import { expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, ROOT } from '../helpers/cli.js';
import { steps, tempPerTest } from '../helpers/history.js';
import { runFiles } from '../helpers/logs.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

// Claim, README "Running real updates", writing a state command: examples/exec/site.sh keeps its own state (`npm run demo:exec`).
test('examples/exec/rollout.sh: 40 fake sites patched by shell scripts, canary first, every step complete', () => {
  const r = spawnSync('bash', [path.join(ROOT, 'examples', 'exec', 'rollout.sh')], {
    env: { ...process.env, SITE_FAIL_PCT: '0', SITE_DELAY_MS: '50' },
    encoding: 'utf8',
    timeout: 110_000,
  });
  expect(r.status).toBe(0);
  expect(r.stdout).toContain('strategy apply exited 0');
  expect(r.stdout).toContain('patches=PATCH_0001');
  expect(r.stdout).toContain('==> attempt 1, updating patches <==\nsite03: patch PATCH_0001 applied\n');
  expect(r.stderr).toMatch(/strategy complete: 40 complete in .*window 10\)/);
}, 120_000);

// Claim, README "Running real updates", writing a state command: examples/exec/ansible runs a playbook per state, limited to the subcloud.
test('examples/exec/ansible: each state runs the playbook limited to the subcloud', async () => {
  // CI installs ansible-core (.ci/run); a machine without it must say so, not pass in silence.
  const which = spawnSync('sh', ['-c', 'command -v ansible-playbook'], { encoding: 'utf8' });
  if (which.status !== 0) throw new Error('ansible-playbook is not installed: apt-get install -y ansible-core (as .ci/run does)');
  const t = temp();
  const sites = path.join(t.dir, 'sites');
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'subcloud2']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'firmware', '--driver', 'exec', '--exec-config', path.join(ROOT, 'examples', 'exec', 'ansible', 'firmware.yaml')]);
  const r = dcm(['--db', t.db, 'strategy', 'apply'], { env: { FAKE_SITES: sites } });
  expect(r.code).toBe(0);
  expect(steps(t.db).map((s) => s.state)).toEqual(['complete']);
  expect(fs.readFileSync(path.join(sites, 'subcloud2', 'states'), 'utf8').trim().split('\n')).toEqual([
    'importing firmware',
    'creating fw update strategy',
    'applying fw update strategy',
    'finishing fw update',
  ]);
  // Limited to the subcloud: no other inventory host was touched.
  expect(fs.readdirSync(sites)).toEqual(['subcloud2']);
  const log = fs.readFileSync(`${await runFiles(t.db, 'subcloud2', 1, 'importing firmware')}.log`, 'utf8');
  expect(log).toMatch(/subcloud2 +: ok=3/);
}, 120_000);

// Claim, README "Running real updates", the config: `reason` makes the message of Ansible's failed task the step's details, not the PLAY RECAP.
test('examples/exec/ansible: a failed task\'s message is the step\'s details', async () => {
  const t = temp();
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'subcloud2']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'firmware', '--driver', 'exec', '--exec-config', path.join(ROOT, 'examples', 'exec', 'ansible', 'firmware.yaml')]);
  const r = dcm(['--db', t.db, 'strategy', 'apply'], { env: { FAKE_SITES: path.join(t.dir, 'sites'), FAKE_BROKEN: 'subcloud2' } });
  expect(r.code).toBe(1);
  expect(steps(t.db).map((s) => [s.state, s.details])).toEqual([['failed', 'importing firmware: exit 2: site not ready: subcloud2 is marked broken']]);
  // What it replaced: the output's last line.
  const log = fs.readFileSync(`${await runFiles(t.db, 'subcloud2', 1, 'importing firmware')}.log`, 'utf8');
  expect(log.trim().split('\n').pop()).toMatch(/subcloud2 +: ok=0 +changed=0 +unreachable=0 +failed=1/);
}, 120_000);

// Issue 34, item 6: a script task that fails says only "non-zero return code"; the reason is the
// last line the script printed (stderr first, else stdout), as dcm's own rule for a plain command.
test('examples/exec/ansible: a failed script task\'s reason is its output, not Ansible\'s generic message', async () => {
  const t = temp();
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'subcloud2']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'firmware', '--driver', 'exec', '--exec-config', path.join(ROOT, 'examples', 'exec', 'ansible', 'firmware.yaml')]);
  const r = dcm(['--db', t.db, 'strategy', 'apply'], { env: { FAKE_SITES: path.join(t.dir, 'sites'), FAKE_DISK_FULL: 'subcloud2' } });
  expect(r.code).toBe(1);
  expect(steps(t.db).map((s) => [s.state, s.details])).toEqual([['failed', 'importing firmware: exit 2: disk full on /var: 2% free']]);
  const log = fs.readFileSync(`${await runFiles(t.db, 'subcloud2', 1, 'importing firmware')}.log`, 'utf8');
  expect(log).toContain('"msg": "non-zero return code"');
}, 120_000);
