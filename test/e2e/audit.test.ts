/**
 * An inventory that follows reality (issue 18, README "Audits"): `subcloud audit` and apply's audit
 * after each subcloud's last state make `subcloud list` say what the sites report, with the exec
 * driver (an `audit` command printing each site's JSON, from files the test writes) and the sim's
 * own sites; a site that disagrees is flagged (a warning, or `failed` with --require-audit); bad
 * JSON is that site's failure; bad input is refused in one line with the file unchanged.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, dcmSpawn, waitFor } from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => f?.cleanup());

const db = () => ['--db', f.db];

/**
 * `audit.sh`: appends `cloud|start_ns|end_ns` to $AUDITS under flock, after sleeping $AUDIT_MS
 * (default 0), and prints the site's file `sites/<cloud>.json` (a site without one exits 3).
 */
function auditScript(): { config: string; sites: string; audits: string } {
  const sites = path.join(f.dir, 'sites');
  fs.mkdirSync(sites);
  const audits = path.join(f.dir, 'audits.log');
  const script = path.join(f.dir, 'audit.sh');
  fs.writeFileSync(
    script,
    `#!/bin/sh
start=$(date +%s%N)
sleep "$(awk -v ms="\${AUDIT_MS:-0}" 'BEGIN{printf "%.3f", ms/1000}')"
end=$(date +%s%N)
flock "$AUDITS.lock" sh -c 'printf "%s\\n" "$1" >> "$AUDITS"' x "$DCM_CLOUD|$start|$end"
[ -f "${sites}/$DCM_CLOUD.json" ] || { echo "no such site $DCM_CLOUD" >&2; exit 3; }
cat "${sites}/$DCM_CLOUD.json"
`,
    { mode: 0o755 },
  );
  const config = f.config(`
states:
  "*": [${f.step}]
audit: [${script}]
`);
  return { config, sites, audits };
}

function site(sites: string, cloud: string, state: unknown): void {
  fs.writeFileSync(path.join(sites, `${cloud}.json`), typeof state === 'string' ? state : JSON.stringify(state));
}

type Row = Record<string, string | number | null>;
const list = (): Row[] => JSON.parse(dcmQuickOk([...db(), 'subcloud', 'list', '-d', '-f', 'json']).stdout) as Row[];
const byName = (rows: Row[]) => Object.fromEntries(rows.map((r) => [(r.name ?? r.cloud) as string, r]));
const show = (name: string): Row => JSON.parse(dcmQuickOk([...db(), 'subcloud', 'show', name, '-d', '-f', 'json']).stdout) as Row;

describe('subcloud audit (exec): the inventory takes what the sites report', () => {
  // Claim, README "Audits": subcloud audit updates software_version, the *_sync columns and availability, prints what changed, exit 0 iff every audit ran.
  test('changes are applied and printed; a site with bad JSON is named, keeps its row, and exits 1', () => {
    f = execFixture();
    const a = auditScript();
    dcmQuickOk([...db(), 'subcloud', 'add', 'east1', 'east2', 'east3', '--software-version', '22.12', '--sync', 'all=out-of-sync']);
    site(a.sites, 'east1', { software_version: '24.09', sync: { patching: 'in-sync', usm: 'in-sync', kube_rootca: 'unknown' }, availability: 'online', uptime: 99 });
    site(a.sites, 'east2', { availability: 'offline', sync: { firmware: 'in-sync' }, extra: { anything: true } });
    site(a.sites, 'east3', 'Permission denied (publickey)');
    const before = show('east3');

    const r = dcmQuick([...db(), 'subcloud', 'audit', '--all', '--driver', 'exec', '--exec-config', a.config, '-f', 'json'], { env: f.env });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual([
      { name: 'east1', field: 'software_version', before: '22.12', after: '24.09' },
      { name: 'east1', field: 'patching_sync_status', before: 'out-of-sync', after: 'in-sync' },
      { name: 'east1', field: 'usm_sync_status', before: 'out-of-sync', after: 'in-sync' },
      { name: 'east1', field: 'kube-rootca_sync_status', before: 'out-of-sync', after: 'unknown' },
      { name: 'east2', field: 'availability', before: 'online', after: 'offline' },
      { name: 'east2', field: 'firmware_sync_status', before: 'out-of-sync', after: 'in-sync' },
    ]);
    expect(r.stderr).toBe(
      'warning: east3: audit: the audit printed no valid JSON: "Permission denied (publickey)"\naudited 3 subcloud(s): 2 changed, 1 failed\n',
    );
    const rows = byName(list());
    expect(rows.east1).toMatchObject({ software_version: '24.09' });
    expect(rows.east2).toMatchObject({ availability: 'offline', software_version: '22.12' });
    expect(show('east1')).toMatchObject({ patching_sync_status: 'in-sync', usm_sync_status: 'in-sync', 'kube-rootca_sync_status': 'unknown', firmware_sync_status: 'out-of-sync' });
    // The site whose audit failed is as it was, to its updated_at.
    expect(show('east3')).toEqual(before);

    // Once the site answers, asked again by name: only what is still different is changed.
    site(a.sites, 'east3', { software_version: '24.09' });
    const again = dcmQuickOk([...db(), 'subcloud', 'audit', 'east3', 'east1', '--driver', 'exec', '--exec-config', a.config, '-f', 'csv'], { env: f.env });
    expect(again.stdout).toBe('"name","field","before","after"\n"east3","software_version","22.12","24.09"\n');
    expect(again.stderr).toBe('audited 2 subcloud(s): 1 changed, 0 failed\n');
    // -q: the summary is not said.
    expect(dcmQuickOk([...db(), '-q', 'subcloud', 'audit', '--all', '--driver', 'exec', '--exec-config', a.config], { env: f.env }).stderr).toBe('');
  });

  // Claim, README "Audits": --max-parallel N bounds the audits in flight; --group G audits that group only.
  test('--max-parallel is never exceeded, by the audits’ own log; --group takes only its subclouds', () => {
    f = execFixture();
    const a = auditScript();
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'fleet']);
    const names = Array.from({ length: 8 }, (_, i) => `f${i + 1}`);
    dcmQuickOk([...db(), 'subcloud', 'add', ...names, '--group', 'fleet']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'other']);
    for (const n of [...names, 'other']) site(a.sites, n, { software_version: '24.09' });
    const r = dcmQuick([...db(), 'subcloud', 'audit', '--group', 'fleet', '--max-parallel', '3', '--driver', 'exec', '--exec-config', a.config, '-f', 'value'], {
      env: { ...f.env, AUDITS: a.audits, AUDIT_MS: '150' },
    });
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(names.map((n) => `${n} software_version None 24.09`));
    const runs = fs.readFileSync(a.audits, 'utf8').trim().split('\n').map((l) => l.split('|'));
    expect(runs.map((x) => x[0]).sort()).toEqual([...names].sort());
    // The most audits running at one instant, from their own start and end times.
    const events = runs.flatMap(([, s, e]) => [{ t: BigInt(s), d: 1 }, { t: BigInt(e), d: -1 }]).sort((x, y) => (x.t === y.t ? x.d - y.d : x.t < y.t ? -1 : 1));
    let now = 0;
    let most = 0;
    for (const ev of events) most = Math.max(most, (now += ev.d));
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThan(1);
    expect(byName(list()).other.software_version).toBeNull();
  });

  // Claim, README "Audits": an audit that outlives its timeout is that site's failure, and its process group is gone when dcm exits.
  test('an audit past its timeout fails that site, and leaves no process behind', () => {
    f = execFixture();
    const cfg = f.config(`
states:
  "*": ["true"]
audit:
  run: sleep 60 & sleep 60; echo '{}'
  timeout: 300ms
  kill_grace: 100ms
`);
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const r = dcmQuick([...db(), 'subcloud', 'audit', 's1', '--driver', 'exec', '--exec-config', cfg], { env: f.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('warning: s1: audit timed out after 300ms\n');
    expect(f.leftovers()).toEqual([]);
  });
});

describe('subcloud audit stopped by a signal', () => {
  // Claim, README "Audits": Ctrl-C stops the audits in flight (their process groups gone), writes what was learnt, exits 130.
  test('SIGINT: what answered is written, the rest is untouched, no process is left', async () => {
    f = execFixture();
    const started = path.join(f.dir, 'started');
    const cfg = f.config(`
audit:
  run: |
    echo $DCM_CLOUD >> ${started}; [ $DCM_CLOUD = fast ] || sleep 60; echo '{"software_version": "24.09"}'
  kill_grace: 200ms
`);
    dcmQuickOk([...db(), 'subcloud', 'add', 'fast', 'slow1', 'slow2', 'slow3', 'queued']);
    const before = show('slow1');
    const run = dcmSpawn([...db(), 'subcloud', 'audit', '--all', '--max-parallel', '3', '--driver', 'exec', '--exec-config', cfg, '-f', 'value'], f.env, { detached: true });
    // fast, slow1 and slow2 start; fast answers and slow3 takes its slot; queued waits.
    await waitFor(() => run.child.exitCode !== null || (fs.existsSync(started) && fs.readFileSync(started, 'utf8').trim().split('\n').length === 4), 60_000);
    expect(run.child.exitCode).toBeNull();
    run.child.kill('SIGINT');
    const r = await run.done;
    expect(r.code).toBe(130);
    expect(r.stdout).toBe('fast software_version None 24.09\n');
    expect(r.stderr).toContain('warning: slow1: audit stopped\n');
    expect(r.stderr).toContain('stopped by SIGINT: audited 4 of 5 subcloud(s): 1 changed, 3 failed\n');
    expect(fs.readFileSync(started, 'utf8').trim().split('\n').sort()).toEqual(['fast', 'slow1', 'slow2', 'slow3']);
    expect(byName(list()).fast.software_version).toBe('24.09');
    expect(show('slow1')).toEqual(before);
    expect(f.leftovers()).toEqual([]);
  });
});

describe("apply's audit after each subcloud's last state (exec)", () => {
  // Claim, README "Audits": with an audit, complete means the site says so; a site that disagrees ends complete with a warning, or failed with --require-audit; the row takes the report.
  test('a site that disagrees is flagged in its step; the rows say what the sites report', () => {
    f = execFixture();
    const a = auditScript();
    dcmQuickOk([...db(), 'subcloud', 'add', 'good', 'stale', 'mute', '--software-version', '22.12', '--sync', 'all=out-of-sync']);
    site(a.sites, 'good', { software_version: '24.09', sync: { usm: 'in-sync', patching: 'in-sync' } });
    site(a.sites, 'stale', { software_version: '22.12', sync: { usm: 'out-of-sync' } });
    site(a.sites, 'mute', '{"sync": ');
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'sw-deploy', '--release-id', 'stx-24.09.1', '--driver', 'exec', '--exec-config', a.config]);
    const r = dcm([...db(), 'strategy', 'apply'], { env: { ...f.env, AUDITS: a.audits } });
    // Complete, and heard: an exit code of its own (issue 49; test/e2e/audit-heard.test.ts).
    expect(r.code).toBe(5);
    const steps = byName(JSON.parse(dcmQuickOk([...db(), 'strategy-step', 'list', '-f', 'json']).stdout) as Row[]);
    expect(steps.good).toMatchObject({ state: 'complete', details: '' });
    expect(steps.stale).toMatchObject({ state: 'complete', details: 'warning: audit: the site reports usm out-of-sync; the site reports software version 22.12, not 24.09' });
    expect(steps.mute).toMatchObject({ state: 'complete', details: 'warning: audit: the audit printed no valid JSON: "{\\"sync\\":"' });
    // Each site audited once, after its last state: the state runs' log has every state first.
    expect(fs.readFileSync(a.audits, 'utf8').trim().split('\n').map((l) => l.split('|')[0]).sort()).toEqual(['good', 'mute', 'stale']);
    for (const cloud of ['good', 'stale', 'mute']) {
      const lastRun = Math.max(...f.readRuns().filter((x) => x.cloud === cloud).map((x) => x.end));
      const audit = fs.readFileSync(a.audits, 'utf8').split('\n').find((l) => l.startsWith(`${cloud}|`))!.split('|');
      // Nanoseconds as doubles: a microsecond of slack for their rounding.
      expect(Number(audit[1])).toBeGreaterThanOrEqual(lastRun - 1000);
    }
    // The inventory follows the sites: the stale site stays out-of-sync on its old version; the
    // one that said nothing readable keeps what completion alone sets (usm in-sync).
    expect(show('good')).toMatchObject({ software_version: '24.09', usm_sync_status: 'in-sync', patching_sync_status: 'in-sync' });
    expect(show('stale')).toMatchObject({ software_version: '22.12', usm_sync_status: 'out-of-sync' });
    expect(show('mute')).toMatchObject({ software_version: '22.12', usm_sync_status: 'in-sync' });
  });

  // Claim, README "Audits": --require-audit fails the step of a site whose audit disagrees or fails (exit 1), and the row still takes what the site said.
  test('--require-audit: a disagreeing or silent site fails its step; the strategy fails', () => {
    f = execFixture();
    const a = auditScript();
    dcmQuickOk([...db(), 'subcloud', 'add', 'good', 'stale', 'gone', '--sync', 'all=out-of-sync']);
    site(a.sites, 'good', { sync: { patching: 'in-sync' } });
    site(a.sites, 'stale', { sync: { patching: 'out-of-sync', firmware: 'in-sync' } });
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--patch-id', 'p1', '--driver', 'exec', '--exec-config', a.config, '--require-audit']);
    const r = dcm([...db(), 'strategy', 'apply'], { env: { ...f.env, AUDITS: a.audits } });
    expect(r.code).toBe(1);
    const steps = byName(JSON.parse(dcmQuickOk([...db(), 'strategy-step', 'list', '-f', 'json']).stdout) as Row[]);
    expect(steps.good).toMatchObject({ state: 'complete' });
    expect(steps.stale).toMatchObject({ state: 'failed', details: 'finishing patch strategy: audit: the site reports patching out-of-sync' });
    expect(steps.gone).toMatchObject({ state: 'failed', details: 'finishing patch strategy: audit: exit 3: no such site gone' });
    expect(show('good').patching_sync_status).toBe('in-sync');
    expect(show('stale')).toMatchObject({ patching_sync_status: 'out-of-sync', firmware_sync_status: 'in-sync' });
    expect(show('gone').patching_sync_status).toBe('out-of-sync');
    // `subcloud errors` says why, as for any failed step.
    expect(dcmQuickOk([...db(), 'subcloud', 'errors', 'stale']).stdout).toBe('finishing patch strategy: audit: the site reports patching out-of-sync\n');
  });
});

describe("apply's audit, seen while it runs", () => {
  // Claim, README "Audits": the audit is part of the last state's operation; meanwhile the step's details say it is auditing.
  test('the step says "auditing the site" until the site answers, then completes', async () => {
    f = execFixture();
    const release = path.join(f.dir, 'release');
    const cfg = f.config(`
states:
  "*": ["true"]
audit:
  run: |
    while [ ! -f ${release} ]; do sleep 0.05; done; echo '{{"sync": {{"firmware": "in-sync"}}}}'
`);
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'firmware', '--driver', 'exec', '--exec-config', cfg]);
    const run = dcmSpawn([...db(), 'strategy', 'apply'], f.env, { detached: true });
    const step = () => (JSON.parse(dcmQuickOk([...db(), 'strategy-step', 'list', '-f', 'json']).stdout) as Row[])[0];
    await waitFor(() => run.child.exitCode !== null || step().details === 'auditing the site', 60_000, 100);
    expect(step()).toMatchObject({ state: 'finishing fw update', details: 'auditing the site' });
    fs.writeFileSync(release, '');
    const r = await run.done;
    expect(r.code).toBe(0);
    expect(step()).toMatchObject({ state: 'complete', details: '' });
    expect(show('s1').firmware_sync_status).toBe('in-sync');
  });
});

describe('the sim’s sites answer audits from their own state', () => {
  // Claim, README "Audits": a simulated site keeps what its completed strategies left it at (the endpoint, sw-deploy's release) and reports it.
  test('subcloud audit after an apply without audit, and apply with --sim-audit', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', 's2', '--software-version', '22.12', '--sync', 'all=out-of-sync']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'down', '--availability', 'offline']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'sw-deploy', '--release-id', 'stx-24.09.1', '--sim-latency', '0']);
    expect(dcm([...db(), 'strategy', 'apply']).code).toBe(0);
    // Without an audit, completion sets only the endpoint: the version is what was typed.
    expect(list().map((r) => [r.name, r.software_version])).toEqual([['s1', '22.12'], ['s2', '22.12'], ['down', null]]);
    // Someone edits the inventory by hand; the audit puts back what the site says.
    dcmQuickOk([...db(), 'subcloud', 'update', 's2', '--sync', 'usm=unknown']);
    const r = dcmQuick([...db(), 'subcloud', 'audit', 's1', 's2', '-f', 'value']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('s1 software_version 22.12 24.09\ns2 software_version 22.12 24.09\ns2 usm_sync_status unknown in-sync\n');
    // An offline site does not answer.
    const down = dcmQuick([...db(), 'subcloud', 'audit', 'down']);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe('warning: down: audit: the site does not answer (it is offline)\naudited 1 subcloud(s): 0 changed, 1 failed\n');

    // With --sim-audit, apply's own audit brings the version: no separate audit needed.
    dcmQuickOk([...db(), 'strategy', 'delete']);
    dcmQuickOk([...db(), 'subcloud', 'update', 's1', 's2', '--sync', 'usm=out-of-sync']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'sw-deploy', '--release-id', 'stx-25.03.0', '--sim-latency', '0', '--sim-audit']);
    expect(dcm([...db(), 'strategy', 'apply']).code).toBe(0);
    const rows = byName(list());
    expect([rows.s1.software_version, rows.s2.software_version]).toEqual(['25.03', '25.03']);
    expect(show('s1').usm_sync_status).toBe('in-sync');
    const steps = JSON.parse(dcmQuickOk([...db(), 'strategy-step', 'list', '-f', 'json']).stdout) as Row[];
    expect(steps.map((s) => [s.cloud, s.state, s.details])).toEqual([['s1', 'complete', ''], ['s2', 'complete', '']]);
  });
});

describe('bad input: one line, the documented exit code, the file unchanged', () => {
  test.each([
    [[], 2, 'error: name the subclouds to audit, or give --group G or --all'],
    [['s1', '--all'], 2, 'error: give subcloud names, --group or --all: only one of them'],
    [['--all', '--max-parallel', '0'], 2, 'error: Invalid --max-parallel value: 0. It must be a whole number from 1 to 5000'],
    [['--all', '--max-parallel', 'lots'], 2, 'error: Invalid --max-parallel value: lots. It must be a whole number from 1 to 5000'],
    [['--all', '--driver', 'exec'], 2, 'error: --driver exec needs --exec-config FILE (a config with "audit")'],
    [['--all', '--driver', 'ssh'], 2, "error: invalid driver 'ssh': choose from sim, exec"],
    [['--all', '--exec-config', 'CFG'], 2, 'error: --exec-config is an option of the exec driver, not of --driver sim'],
    [['--all', '--driver', 'exec', '--exec-config', 'NOAUDIT'], 2, `error: exec config NOAUDIT: audit: missing: give the command that prints the site's state as JSON`],
    [['--all', '--driver', 'exec', '--exec-config', 'BADAUDIT'], 2, 'error: exec config BADAUDIT: audit: retries: unknown key; use run, timeout, kill_grace, env, cwd'],
    [['nope'], 1, 'error: Subcloud nope does not exist'],
    [['--group', 'nope'], 1, 'error: Subcloud group nope does not exist'],
    // An unknown column is the client's own check, as dcmanager's: exit 1.
    [['--all', '-c', 'colour'], 1, null],
  ] as [string[], number, string | null][])('subcloud audit %j', (args, code, message) => {
    f = execFixture();
    const cfg = f.config('audit: ["true"]\n', 'cfg.yaml');
    const noAudit = f.config('states: {"*": ["true"]}\n', 'noaudit.yaml');
    const badAudit = f.config('audit: {run: ["true"], retries: 2}\n', 'badaudit.yaml');
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', '--software-version', '22.12']);
    const before = list();
    const files = { CFG: cfg, NOAUDIT: noAudit, BADAUDIT: badAudit } as Record<string, string>;
    const argv = args.map((x) => files[x] ?? x);
    const r = dcmQuick([...db(), 'subcloud', 'audit', ...argv]);
    expect(r.code).toBe(code);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    if (message) expect(lines[0]).toBe(message.replace(/NOAUDIT/, noAudit).replace(/BADAUDIT/, badAudit));
    expect(list()).toEqual(before);
    // No sites file for a refused sim audit either.
    expect(fs.existsSync(`${f.db}.sites`)).toBe(false);
  });

  test('no file: nothing to audit, exit 0, and no file (nor sites file) is created', () => {
    f = execFixture();
    const r = dcmQuick([...db(), 'subcloud', 'audit', '--all', '-f', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([{ name: '<none>', field: '<none>', before: '<none>', after: '<none>' }]);
    expect(fs.existsSync(f.db)).toBe(false);
    expect(fs.existsSync(`${f.db}.sites`)).toBe(false);
  });

  test('strategy create --require-audit with an exec config that has no audit: usage error, nothing created', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const cfg = f.config('states: {"*": ["true"]}\n');
    const r = dcmQuick([...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg, '--require-audit']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('error: --require-audit needs an audit: add "audit" to the exec config\n');
    expect(dcmQuick([...db(), 'strategy', 'show']).code).toBe(1);
  });
});
