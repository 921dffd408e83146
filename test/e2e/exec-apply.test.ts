/**
 * The exec driver end to end (SPEC §7.2), with real processes judged by their own log: each
 * (cloud, state) runs exactly once with exit 0, never more subclouds at once than the window,
 * the environment and placeholders as specified; failures, retries and timeouts.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { statesOf } from '../../src/domain/types.js';
import { dcm, ROOT } from '../helpers/cli.js';
import { isPgUrl } from '../../src/domain/db-url.js';
import { storeState } from '../helpers/db.js';
import { defaultLogDir } from '../../src/domain/logs.js';
import { history, names, steps } from '../helpers/history.js';
import { execFixture, overlapsPerCloud, peakConcurrent, type ExecFixture } from '../helpers/exec.js';
import { runFiles, strategyId } from '../helpers/logs.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const PATCH = statesOf('patch');
let f: ExecFixture;
afterEach(() => f?.cleanup());

const db = () => ['--db', f.db];

describe('exec driver: apply', () => {
  // Claim, README "Running real updates", what a run sees: its output in `DIR/<cloud>/<attempt>-<state>.log` (the status beside it),
  // DCM_CLOUD, DCM_STATE, DCM_TYPE, DCM_STAGE, DCM_ATTEMPT, DCM_RESUMED, DCM_DB; a list command runs directly, a
  // string one in /bin/sh with its values quoted.
  test('every (cloud, state) runs exactly once, at most the window at once, with the DCM_* environment', async () => {
    f = execFixture();
    const N = 12;
    const WINDOW = 4;
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'east']);
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(N), '--group', 'east', '--location', "it's here; $(touch pwned)"]);
    // A list runs directly: each item one argument. A string runs in /bin/sh with values quoted.
    const cfg = f.config(`
defaults:
  timeout: 30s
  env: {STEP_MIN_MS: "20", STEP_MAX_MS: "120", SITE: "site-{cloud}"}
states:
  pre check:
    run: ${f.step} {cloud} {location} "$SITE" {patch_id} {stage} {group}
  "*": [${f.step}, "{cloud}", "{state}", "{type}", "{attempt}", "{db}"]
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--patch-id', 'PATCH-7', '--max-parallel-subclouds', String(WINDOW),
      '--driver', 'exec', '--exec-config', cfg]);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.stderr).toContain('strategy complete');
    expect(r.code).toBe(0);

    const runs = f.readRuns();
    const keys = runs.map((x) => `${x.cloud}/${x.state}`).sort();
    expect(keys).toEqual(names(N).flatMap((c) => PATCH.map((s) => `${c}/${s}`)).sort());
    expect(peakConcurrent(runs)).toBeLessThanOrEqual(WINDOW);
    expect(peakConcurrent(runs)).toBeGreaterThan(1);
    expect(overlapsPerCloud(runs)).toEqual([]);
    expect(fs.existsSync(path.join(f.dir, 'pwned'))).toBe(false);

    const pre = runs.find((x) => x.cloud === 's3' && x.state === 'pre check')!;
    expect(pre.args).toBe(`s3 it's here; $(touch pwned) site-s3 PATCH-7 1 east`);
    const vim = runs.find((x) => x.cloud === 's5' && x.state === PATCH[2])!;
    expect(vim.args).toBe(`s5 ${PATCH[2]} patch 1 ${isPgUrl(f.db) ? f.db : path.resolve(f.db)}`);
    expect(vim.attempt).toBe(1);
    expect(vim.resumed).toBe(false);

    // Each run's output is in its own log file; the status beside it.
    const base = await runFiles(f.db, 's5', 1, PATCH[2]);
    expect(base).toBe(path.join(path.resolve(ROOT, defaultLogDir(f.db)), await strategyId(f.db), 's5', '1-creating-VIM-patch-strategy'));
    // Written by the run's wrapper: the exit status, then the run it is for (and that nothing of
    // the run was left, from native/dcm-run).
    expect(fs.readFileSync(`${base}.status`, 'utf8').trim()).toMatch(/^0 \d+\/s5\/creating%20VIM%20patch%20strategy\/1( alone)?$/);
    expect(history(f.db).every((h) => h.outcome === 'ok')).toBe(true);
    expect(f.leftovers()).toEqual([]);
    // Completion brings the endpoint in sync, as for any patch strategy.
    const show = JSON.parse(dcmQuickOk([...db(), 'subcloud', 'show', 's1', '-f', 'json']).stdout) as Record<string, string>;
    expect(show.patching_sync_status).toBe('in-sync');
  });

  // Claim, README "Running real updates", what a run sees: DCM_ARG_<NAME>, DCM_OPT_<NAME>, dcm's own DCM_* settings left out, `--log-dir`;
  // the result: a later state's name (or `complete`) written to $DCM_NEXT skips forward.
  test('environment: type options, strategy-config options (own row, else the default), DCM_NEXT skips forward, --log-dir', async () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', 's2']);
    dcmQuickOk([...db(), 'strategy-config', 'update', 's1', '--storage-apply-type', 'serial', '--worker-apply-type', 'serial',
      '--max-parallel-workers', '3', '--alarm-restriction-type', 'strict', '--default-instance-action', 'migrate']);
    const envDump = path.join(f.dir, 'env-$DCM_CLOUD-$DCM_ATTEMPT');
    const cfg = f.config(`
states:
  kube upgrade pre check:
    run: env | grep '^DCM_' | grep -v '^DCM_NEXT=\\|^DCM_RUN_ID=\\|^DCM_FENCE=\\|^DCM_SUB_' | sort > "${envDump}"; [ "$DCM_CLOUD" = s2 ] && echo complete > "$DCM_NEXT"; exit 0
  "*": "true"
`);
    const logs = path.join(f.dir, 'runlogs');
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'kubernetes', '--to-version', 'v1.29.2', '--driver', 'exec', '--exec-config', cfg, '--log-dir', logs]);
    expect(dcm([...db(), 'strategy', 'apply'], { env: { ...f.env, DCM_STRAY: 'x' } }).code).toBe(0);
    const env = Object.fromEntries(
      fs.readFileSync(path.join(f.dir, 'env-s1-1'), 'utf8').trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(env).toEqual({
      DCM_ARG_TO_VERSION: 'v1.29.2',
      DCM_ATTEMPT: '1',
      DCM_CLOUD: 's1',
      DCM_DB: isPgUrl(f.db) ? f.db : path.resolve(f.db),
      DCM_LOG: path.join(logs, await strategyId(f.db), 's1', '1-kube-upgrade-pre-check.log'),
      DCM_OPT_ALARM_RESTRICTION_TYPE: 'strict',
      DCM_OPT_DEFAULT_INSTANCE_ACTION: 'migrate',
      DCM_OPT_MAX_PARALLEL_WORKERS: '3',
      DCM_OPT_STORAGE_APPLY_TYPE: 'serial',
      DCM_OPT_WORKER_APPLY_TYPE: 'serial',
      DCM_PROGRESS: path.join(logs, await strategyId(f.db), 's1', '1-kube-upgrade-pre-check.progress'),
      DCM_STAGE: '1',
      DCM_STATE: 'kube upgrade pre check',
      DCM_TYPE: 'kubernetes',
    });
    // s2 has no row of its own: the default row's options.
    const env2 = fs.readFileSync(path.join(f.dir, 'env-s2-1'), 'utf8');
    expect(env2).toContain('DCM_OPT_MAX_PARALLEL_WORKERS=10\n');
    expect(env2).toContain('DCM_OPT_DEFAULT_INSTANCE_ACTION=stop-start\n');
    // s2 skipped to complete: only its pre check ran.
    const h2 = history(f.db, 's2');
    expect(h2.map((h) => h.state)).toEqual(['kube upgrade pre check']);
    expect(steps(f.db).map((s) => s.state)).toEqual(['complete', 'complete']);
  });

  // Claim, README "Running real updates", what a run sees: DCM_SYSADMIN_PASSWORD when `--sysadmin-password` was given.
  test('--sysadmin-password reaches each run as DCM_SYSADMIN_PASSWORD, and no command prints it', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const dump = path.join(f.dir, 'pw-$DCM_STATE');
    const cfg = f.config(`
states:
  "*":
    run: printf '%s' "$DCM_SYSADMIN_PASSWORD" > "${dump}"
`);
    const secret = 'Sec-ret#42';
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'prestage', '--sysadmin-password', secret, '--driver', 'exec', '--exec-config', cfg]);
    expect(dcm([...db(), 'strategy', 'apply'], { env: f.env }).code).toBe(0);
    expect(fs.readFileSync(path.join(f.dir, 'pw-prestage-precheck'), 'utf8')).toBe(secret);
    for (const args of [['strategy', 'show', '-f', 'json'], ['strategy', 'status', '-f', 'yaml'], ['strategy-step', 'list', '-f', 'csv']]) {
      const r = dcmQuickOk([...db(), ...args]);
      expect(r.stdout + r.stderr).not.toContain(secret);
    }
  });

  // Claim, README "Running real updates", the result: exit N ≠ 0 fails; with retries left the state runs again after the backoff,
  // a new attempt with its own history row; then details `<state>: exit N: <last non-empty line>`.
  test('a failure: details carry the exit code and the last line; retries with backoff, one history row per run', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', 's2']);
    const cfg = f.config(`
defaults: {backoff: 50ms..80ms}
states:
  pre check:
    run: echo checking {cloud}; [ {cloud} = s1 ] || exit 0; echo disk full on {cloud} >&2; exit 7
    retries: 2
  "*": "true"
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(1);
    const s1 = steps(f.db).find((s) => s.cloud === 's1')!;
    expect(s1.state).toBe('failed');
    expect(s1.details).toBe('pre check: exit 7: disk full on s1');
    const h = history(f.db, 's1');
    expect(h.map((x) => [x.state, x.attempt, x.outcome, x.details])).toEqual([
      ['pre check', 1, 'failed', 'exit 7: disk full on s1'],
      ['pre check', 2, 'failed', 'exit 7: disk full on s1'],
      ['pre check', 3, 'failed', 'exit 7: disk full on s1'],
    ]);
    // Backoff: the second run started at least 50 ms after the first ended, the third 80 ms after.
    const gap = (a: string, b: string) => Date.parse(b.replace(' ', 'T') + 'Z') - Date.parse(a.replace(' ', 'T') + 'Z');
    expect(gap(h[0].finished_at!, h[1].started_at)).toBeGreaterThanOrEqual(45);
    expect(gap(h[1].finished_at!, h[2].started_at)).toBeGreaterThanOrEqual(75);
    expect(steps(f.db).find((s) => s.cloud === 's2')!.state).toBe('complete');
  });

  // Claim, README "Running real updates", timeout: SIGTERM to the run's process group, SIGKILL after kill_grace; children killed too
  // (`sleep 1000 &`); the step fails with `<state>: timed out after …`.
  test('a timeout kills the command and the children it started; none is left when the step is failed', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const pids = path.join(f.dir, 'pids');
    // The command ignores SIGTERM, so only the SIGKILL after kill_grace ends it.
    const cfg = f.config(`
defaults: {timeout: 300ms, kill_grace: 200ms}
states:
  pre check:
    run: sleep 1000 & echo $! >> ${pids}; trap '' TERM; sh -c 'trap "" TERM; sleep 1000' & echo $! >> ${pids}; wait
  "*": "true"
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(1);
    expect(steps(f.db)[0].details).toBe('pre check: timed out after 300ms');
    expect(history(f.db, 's1').map((h) => h.outcome)).toEqual(['timeout']);
    expect(fs.readFileSync(pids, 'utf8').trim().split('\n')).toHaveLength(2);
    expect(f.leftovers()).toEqual([]);
  });

  // Claim, README "Running real updates", the config: `--type custom` runs the config's states in file order, takes every managed,
  // online subcloud, and completion changes no sync status.
  test('--type custom runs the config\'s states in file order, takes every managed online subcloud, changes no sync status', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', 's2', '--sync', 'all=in-sync']);
    dcmQuickOk([...db(), 'subcloud', 'add', 's3', '--availability', 'offline']);
    const cfg = f.config(`
states:
  drain: [${f.step}, drain]
  "10": [${f.step}, ten]
  reboot: [${f.step}, reboot]
`);
    const created = dcmQuickOk([...db(), 'strategy', 'create', '--type', 'custom', '--driver', 'exec', '--exec-config', cfg]);
    expect(created.stdout).toContain('custom');
    expect(dcm([...db(), 'strategy', 'apply'], { env: f.env }).code).toBe(0);
    const runs = f.readRuns();
    for (const c of ['s1', 's2']) expect(runs.filter((r) => r.cloud === c).map((r) => r.state)).toEqual(['drain', '10', 'reboot']);
    expect(runs.some((r) => r.cloud === 's3')).toBe(false);
    const show = JSON.parse(dcmQuickOk([...db(), 'subcloud', 'show', 's1', '-f', 'json']).stdout) as Record<string, string | null>;
    expect(show.patching_sync_status).toBe('in-sync');
    expect(show.prestage_status ?? null).toBe(null);
  });
});

describe('exec driver: bad configs are refused at create, nothing written', () => {
  const cases: [string, string, string[], RegExp][] = [
    ['a missing state', 'states:\n  pre check: "true"\n', [], /state "updating patches": missing/],
    ['an unknown state', 'states:\n  pre-check: "true"\n  "*": "true"\n', [], /state "pre-check": not a state of this type/],
    ['an unknown placeholder', 'states:\n  "*": [echo, "{clod}"]\n', [], /state "\*": run: unknown placeholder \{clod\}/],
    ['a bad duration', 'states:\n  "*": {run: "true", timeout: 10}\n', [], /state "\*": timeout: bad duration 10/],
    ['a bad default', 'defaults: {backoff: fast}\nstates:\n  "*": "true"\n', [], /defaults: backoff: bad duration/],
    ['an unknown key', 'states:\n  "*": {run: "true", retry: 2}\n', [], /state "\*": retry: unknown key/],
    ['"*" with custom', 'states:\n  "*": "true"\n', ['--type', 'custom'], /"\*".*not allowed/],
    ['not YAML', 'states: [\n', [], /not valid YAML or JSON/],
  ];
  // Claim, README "Running real updates", the config: checked at create; a missing or unknown state, an unknown key or placeholder, a
  // duration without a unit: an error naming the state and the key (exit 2), and nothing written.
  test.each(cases)('%s', (_name, text, extra, message) => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const before = storeState(f.db);
    const cfg = f.config(text);
    const args = extra.length ? extra : ['--type', 'patch'];
    const r = dcmQuick([...db(), 'strategy', 'create', ...args, '--driver', 'exec', '--exec-config', cfg]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: /);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(storeState(f.db)).toBe(before);
  });

  test('--sim-* with exec, --exec-config with sim, custom with sim, exec without a config: usage errors', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const cfg = f.config('states:\n  "*": "true"\n');
    const before = storeState(f.db);
    for (const [args, message] of [
      [['--type', 'patch', '--driver', 'exec', '--exec-config', cfg, '--sim-latency', '1s'], /--sim-latency is an option of the sim driver/],
      [['--type', 'patch', '--exec-config', cfg], /--exec-config is an option of the exec driver/],
      [['--type', 'patch', '--driver', 'sim', '--log-dir', f.dir], /--log-dir is an option of the exec driver/],
      [['--type', 'custom'], /--type custom .* --driver exec/],
      [['--type', 'patch', '--driver', 'exec'], /--driver exec needs --exec-config/],
      [['--type', 'patch', '--driver', 'ssh'], /invalid driver 'ssh'/],
      [['--type', 'patch', '--driver', 'exec', '--exec-config', cfg, '--state-timeout', '5m'], /--state-timeout is not used by --driver exec/],
    ] as [string[], RegExp][]) {
      const r = dcmQuick([...db(), 'strategy', 'create', ...args]);
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(message)]);
    }
    expect(storeState(f.db)).toBe(before);
  });

  // Claim, README "Running real updates", the config: the parsed config is stored with the strategy; editing the file later changes no strategy.
  test('editing the config after create changes nothing: the strategy keeps what was checked', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const cfg = f.config(`states:\n  "*": [${f.step}, first]\n`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'firmware', '--driver', 'exec', '--exec-config', cfg]);
    fs.writeFileSync(cfg, 'states:\n  "*": [false]\n');
    expect(dcm([...db(), 'strategy', 'apply'], { env: f.env }).code).toBe(0);
    expect(f.readRuns().map((r) => r.args)).toEqual(['first', 'first', 'first', 'first']);
  });
});
