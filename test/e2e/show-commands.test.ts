/**
 * `strategy create --dry-run --show-commands [CLOUD]`: per state, the argv, cwd and environment a
 * run of the subcloud would get, pinned by a golden file (the test's folder written as $TMP), and
 * held to what an apply then hands the same runs. Nothing is written; the password is masked.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { dcm, dirFingerprint, expectRefused, tempDir } from '../helpers/fleet.js';
import { strategyId } from '../helpers/logs.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const GOLDEN = path.join(ROOT, 'test', 'golden', 'show-commands.json.txt');
const SECRET = 'S3cr3t!pw';

let t: ReturnType<typeof tempDir>;
let create: string[];
let preview: { state: string; name: string; value: string }[];

beforeAll(() => {
  t = tempDir();
  const out = path.join(t.dir, 'out');
  const cfgDir = path.join(t.dir, 'cfg');
  for (const group of ['canary', 'fleet']) fs.mkdirSync(path.join(cfgDir, group), { recursive: true });
  fs.mkdirSync(out);
  // Each run leaves its arguments and the environment dcm gave it, to hold the preview to.
  const script = path.join(cfgDir, 'run.sh');
  fs.writeFileSync(script, `#!/bin/sh\nprintf '%s\\n' "$@" > "${out}/$DCM_CLOUD.$DCM_STATE.args"\nenv | grep -E '^(DCM_|SITE=|WHERE=)' | sort > "${out}/$DCM_CLOUD.$DCM_STATE.env"\n`, { mode: 0o755 });
  const cfg = path.join(cfgDir, 'sw.yaml');
  fs.writeFileSync(
    cfg,
    `defaults:
  env: {SITE: "site-{cloud}", WHERE: "{location}"}
states:
  sw-deploy pre-check: [${script}, "{cloud}", "{release_id}", "{location}"]
  sw-deploy install license:
    run: ${script} {cloud} {location} {release_id}
    cwd: "{group}"
  "*": [${script}, "{state}", "{attempt}", "{stage}"]
`,
  );
  fs.writeFileSync(path.join(t.dir, 'pw'), `${SECRET}\n`, { mode: 0o600 });
  const db = ['--db', t.db];
  dcmQuickOk([...db, 'subcloud-group', 'add', '--name', 'canary']);
  dcmQuickOk([...db, 'subcloud-group', 'add', '--name', 'fleet']);
  dcmQuickOk([...db, 'subcloud', 'add', 's0', '--group', 'canary']);
  dcmQuickOk([...db, 'subcloud', 'add', 's1', '--group', 'fleet', '--location', "rack 4, it's here"]);
  dcmQuickOk([...db, 'strategy-config', 'update', 's1', '--storage-apply-type', 'serial', '--worker-apply-type', 'parallel',
    '--max-parallel-workers', '4', '--alarm-restriction-type', 'strict', '--default-instance-action', 'migrate']);
  create = [...db, 'strategy', 'create', '--type', 'sw-deploy', '--release-id', 'stx-10.0.1', '--with-prestage',
    '--sysadmin-password-file', path.join(t.dir, 'pw'), '--driver', 'exec', '--exec-config', cfg];
});
afterAll(() => t.cleanup());

describe('strategy create --dry-run --show-commands', () => {
  test('the golden file: argv (a string command is /bin/sh -c and its line), cwd, the environment; password masked; nothing written', () => {
    const before = dirFingerprint(t.dir);
    const r = dcmQuick([...create, '--dry-run', '--show-commands', 's1', '-f', 'json']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(dirFingerprint(t.dir)).toEqual(before);
    expect(r.stdout).not.toContain(SECRET);
    const text = r.stdout.split(t.dir).join('$TMP');
    // After a deliberate change of the output: DCM_WRITE_GOLDEN=1 writes the file from this run.
    if (process.env.DCM_WRITE_GOLDEN === '1') fs.writeFileSync(GOLDEN, text);
    expect(text).toBe(fs.readFileSync(GOLDEN, 'utf8'));
    preview = JSON.parse(r.stdout) as typeof preview;
  });

  test('without a cloud: the plan\'s first subcloud; the table holds the same rows', () => {
    const first = JSON.parse(dcmQuickOk([...create, '--dry-run', '--show-commands', '-f', 'json']).stdout) as typeof preview;
    expect(first.find((x) => x.name === 'DCM_CLOUD')!.value).toBe('s0');
    const table = dcmQuickOk([...create, '--dry-run', '--show-commands', 's1']).stdout;
    expect(table).toMatch(/^\| sw-deploy install license +\| argv\[2\] +\| .*run\.sh 's1' 'rack 4, it'\\''s here' 'stx-10\.0\.1' +\|$/m);
    expect(table).toMatch(/^\| sw-deploy pre-check +\| DCM_SYSADMIN_PASSWORD +\| \*{8} +\|$/m);
  });

  test('what apply hands each run is what was shown: argv, the environment, apart from what only an apply knows', async () => {
    dcmQuickOk(create);
    const r = dcm(['--db', t.db, 'strategy', 'apply', '-q']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const id = await strategyId(t.db);
    const states = [...new Set(preview.map((p) => p.state))];
    expect(states).toHaveLength(5);
    for (const state of states) {
      const shown = preview.filter((p) => p.state === state);
      const base = path.join(t.dir, 'out', `s1.${state}`);
      const env = Object.fromEntries(fs.readFileSync(`${base}.env`, 'utf8').trimEnd().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      const expected = Object.fromEntries(shown.filter((p) => p.name !== 'cwd' && !p.name.startsWith('argv[')).map((p) => [p.name, p.value]));
      expect(env.DCM_SYSADMIN_PASSWORD).toBe(SECRET);
      expect(expected.DCM_SYSADMIN_PASSWORD).toBe('********');
      expect(env.DCM_RUN_ID).toMatch(/^\d+\//);
      expect(env.DCM_RUN_ID.replace(/^\d+/, '<strategy>')).toBe(expected.DCM_RUN_ID);
      expect(env.DCM_FENCE).not.toBe('');
      // The run files' folder is named by the strategy's id, unknown before create: `<strategy>` in the preview.
      for (const k of ['DCM_LOG', 'DCM_NEXT', 'DCM_PROGRESS']) env[k] = env[k].replace(`/${id}/`, '/<strategy>/');
      for (const k of ['DCM_SYSADMIN_PASSWORD', 'DCM_RUN_ID', 'DCM_FENCE']) {
        delete env[k];
        delete expected[k];
      }
      expect([state, env]).toEqual([state, expected]);
      // A list's items are the command's arguments; a string command's line is what the shell split.
      const args = fs.readFileSync(`${base}.args`, 'utf8');
      const argv = shown.filter((p) => p.name.startsWith('argv[')).map((p) => p.value);
      if (argv[0] === '/bin/sh') expect(args).toBe("s1\nrack 4, it's here\nstx-10.0.1\n");
      else expect(args).toBe(argv.slice(1).map((a) => `${a}\n`).join(''));
    }
  });

  test('refused, exit 2, nothing written: without --dry-run, with the sim driver, a cloud with no step', () => {
    dcmQuickOk(['--db', t.db, 'strategy', 'delete', '--yes']);
    // The apply brought both in-sync: out of sync again, they have steps to show.
    dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's0', 's1', '--sync', 'usm=out-of-sync']);
    expectRefused(t.dir, [...create, '--show-commands'], 2, '--show-commands needs --dry-run: it shows what would run, and creates nothing');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'create', '--type', 'firmware', '--dry-run', '--show-commands'], 2,
      '--show-commands needs --driver exec: the sim driver runs no command');
    expectRefused(t.dir, [...create, '--dry-run', '--show-commands', 's9'], 2, '--show-commands s9: the subcloud has no step in this plan');
  });
});
