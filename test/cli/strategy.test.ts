/**
 * `strategy create|show|delete`, the per-type aliases and `strategy-step list|show`, in process
 * through `main` (SPEC §4, §5). The example fleet: Default (parallel, 2): s1, s2 unmanaged,
 * s3 in-sync; canary (parallel, 3): s4, s5 offline; rest (serial): s6, s7, s8.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Fixture, makeFleet, stageWindows, TIME, withSql } from '../helpers/fleet.js';
import { run, runOk } from '../helpers/inprocess.js';

let fx: Fixture;
beforeAll(() => {
  fx = new Fixture(makeFleet);
});
afterAll(() => fx.cleanup());

type Step = { cloud: string; 'stage number': number };

async function steps(db: string, ...args: string[]): Promise<[string, number][]> {
  // dcm's stage number is its own column, named with -c (the list's `stage` is the server's word).
  const r = await runOk(['--db', db, 'strategy-step', 'list', '-f', 'json', '-c', 'cloud', '-c', 'stage number', ...args]);
  return (JSON.parse(r.stdout) as Step[]).map((s) => [s.cloud, s['stage number']]);
}
async function showJson(db: string, ...args: string[]): Promise<Record<string, unknown>> {
  return JSON.parse((await runOk(['--db', db, ...args, '-f', 'json'])).stdout) as Record<string, unknown>;
}
const create = (db: string, ...args: string[]) => runOk(['--db', db, 'strategy', 'create', ...args]);

describe('windows recorded per stage', () => {
  test('strategy max parallel for parallel groups; a serial group stays 1', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'patch', '--max-parallel-subclouds', '7');
    expect(await stageWindows(db)).toEqual([
      [1, 7],
      [2, 7],
      [3, 1],
    ]);
    const s = await showJson(db, 'strategy', 'show');
    expect(s['max parallel subclouds']).toBe(7);
    expect(s['subcloud apply type']).toBeNull();
  });

  test('--subcloud-apply-type serial: every window 1; parallel overrides a serial group', async () => {
    const a = fx.fresh();
    await create(a.db, '--type', 'patch', '--subcloud-apply-type', 'serial', '--max-parallel-subclouds', '4');
    expect(await stageWindows(a.db)).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
    const b = fx.fresh();
    await create(b.db, '--type', 'patch', '--subcloud-apply-type', 'parallel');
    // No strategy max parallel: each group's own.
    expect(await stageWindows(b.db)).toEqual([
      [1, 2],
      [2, 3],
      [3, 2],
    ]);
    expect((await showJson(b.db, 'strategy', 'show'))['subcloud apply type']).toBe('parallel');
  });

  test('--max-parallel-subclouds 5000 is accepted; 250 for prestage', async () => {
    const a = fx.fresh();
    await create(a.db, '--type', 'patch', '--max-parallel-subclouds', '5000');
    expect((await stageWindows(a.db))[0]).toEqual([1, 5000]);
    const b = fx.fresh();
    await create(b.db, '--type', 'prestage', '--max-parallel-subclouds', '250');
    expect((await stageWindows(b.db))[0]).toEqual([1, 250]);
  });

  test('the group window is read at create time: a later group change does not move it', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'patch', '--group', 'canary');
    await runOk(['--db', db, 'subcloud-group', 'update', 'canary', '--max_parallel_subclouds', '9']);
    expect(await stageWindows(db)).toEqual([[1, 3]]);
  });
});

describe('who gets a step', () => {
  test('a later strategy picks up only what is left', async () => {
    const { db } = fx.fresh();
    await runOk(['--db', db, 'subcloud', 'update', 's1', 's6', '--sync', 'patching=in-sync']);
    await create(db, '--type', 'patch');
    expect(await steps(db)).toEqual([
      ['s4', 1],
      ['s7', 2],
      ['s8', 2],
    ]);
    expect(await stageWindows(db)).toEqual([
      [1, 3],
      [2, 1],
    ]);
  });

  test('kubernetes --force takes in-sync s3 as well', async () => {
    const { db } = fx.fresh();
    await runOk(['--db', db, 'kube-upgrade-strategy', 'create', '--force', '--to-version', 'v1.29.2']);
    expect(await steps(db)).toEqual([
      ['s1', 1],
      ['s3', 1],
      ['s4', 2],
      ['s6', 3],
      ['s7', 3],
      ['s8', 3],
    ]);
  });

  test('a named in-sync cloud with --force, kube-rootca-update', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'kube-rootca-update', 's3', '--force');
    expect(await steps(db)).toEqual([['s3', 1]]);
  });

  test('prestage: managed, online, deploy status complete', async () => {
    const { db } = fx.fresh();
    await runOk(['--db', db, 'subcloud', 'update', 's7', '--deploy-status', 'deploying']);
    await runOk(['--db', db, 'prestage-strategy', 'create', '--release', '24.09']);
    expect(await steps(db)).toEqual([
      ['s1', 1],
      ['s3', 1],
      ['s4', 2],
      ['s6', 3],
      ['s8', 3],
    ]);
  });

  test('--group by id', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'patch', '--group', '3');
    expect(await steps(db)).toEqual([
      ['s6', 1],
      ['s7', 1],
      ['s8', 1],
    ]);
  });
});

describe('the strategy record', () => {
  test("patch: the seven fields and the old client's 'upload only', unset values null, the server's window of 2, times in dcmanager form", async () => {
    const { db } = fx.fresh();
    const out = await create(db, '--type', 'patch', '--stop-on-failure', '-f', 'json');
    const s = JSON.parse(out.stdout) as Record<string, unknown>;
    expect(Object.keys(s)).toEqual([
      'strategy type',
      'subcloud apply type',
      'max parallel subclouds',
      'stop on failure',
      'upload only',
      'state',
      'created_at',
      'updated_at',
    ]);
    expect(s).toMatchObject({
      'strategy type': 'patch',
      'subcloud apply type': null,
      'max parallel subclouds': 2,
      'upload only': false,
      'stop on failure': true,
      state: 'initial',
      updated_at: null,
    });
    expect(s.created_at).toMatch(TIME);
    // create prints what show prints.
    expect(await showJson(db, 'strategy', 'show')).toEqual(s);
  });

  test('sw-deploy adds its fields after stop on failure', async () => {
    const { db } = fx.fresh();
    await runOk(['--db', db, 'sw-deploy-strategy', 'create', '--release-id', 'stx-10.0.1', '--snapshot', '--with-prestage']);
    const s = await showJson(db, 'sw-deploy-strategy', 'show');
    expect(Object.keys(s)).toEqual([
      'strategy type',
      'subcloud apply type',
      'max parallel subclouds',
      'stop on failure',
      'release_id',
      'snapshot',
      'rollback',
      'delete_option',
      'with_prestage',
      'kube_upgrade',
      'state',
      'created_at',
      'updated_at',
    ]);
    expect(s).toMatchObject({
      'strategy type': 'sw-deploy',
      release_id: 'stx-10.0.1',
      snapshot: true,
      rollback: false,
      // dcmanager names the option: delete_option 'delete' or 'cleanup', with_prestage 'with_prestage'.
      delete_option: null,
      with_prestage: 'with_prestage',
      // Not given: an empty string, as the client prints it (its extract_extra_args drops a null).
      kube_upgrade: '',
    });
    const d = fx.fresh();
    await runOk(['--db', d.db, 'sw-deploy-strategy', 'create', '--release-id', 'r1', '--delete', '--kube-upgrade', 'v1.29.2']);
    expect(await showJson(d.db, 'strategy', 'show')).toMatchObject({ delete_option: 'delete', with_prestage: null, kube_upgrade: 'v1.29.2' });
    const c = fx.fresh();
    await runOk(['--db', c.db, 'sw-deploy-strategy', 'create', '--cleanup']);
    expect(await showJson(c.db, 'strategy', 'show')).toMatchObject({ delete_option: 'cleanup', release_id: null });
  });

  test('--sysadmin-password: kept in the extra args only, never printed', async () => {
    const { db } = fx.fresh();
    const out = (await runOk(['--db', db, 'sw-deploy-strategy', 'create', '--release-id', 'r1', '--with-prestage', '--sysadmin-password', 'Pw-1'])).stdout;
    expect(out).not.toContain('Pw-1');
    const extra = await withSql(db, async (d) => JSON.parse((await d.prepare('SELECT extra_args FROM strategy').get() as { extra_args: string }).extra_args));
    expect(extra.sysadmin_password).toBe('Pw-1');
    expect(Object.entries(extra).filter(([, v]) => v === 'Pw-1').map(([k]) => k)).toEqual(['sysadmin_password']);
    const p = fx.fresh();
    await runOk(['--db', p.db, 'prestage-strategy', 'create', '--sysadmin-password', 'Pw-2']);
    for (const f of ['table', 'json', 'yaml', 'value', 'shell', 'csv']) {
      expect((await runOk(['--db', p.db, 'strategy', 'show', '-f', f])).stdout).not.toContain('Pw-2');
    }
    // dcmanager's client: the password goes with --with-prestage only.
    const n = fx.fresh();
    const r = await run(['--db', n.db, 'sw-deploy-strategy', 'create', '--release-id', 'r1', '--sysadmin-password', 'x']);
    // The client's own check: exit 1, as the client's.
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: --sysadmin-password can only be used with --with-prestage\n');
  });

  test('sw-deploy --rollback needs no release id', async () => {
    const { db } = fx.fresh();
    await runOk(['--db', db, 'strategy', 'create', '--type', 'sw-deploy', '--rollback']);
    expect(await showJson(db, 'strategy', 'show')).toMatchObject({ release_id: null, rollback: true });
  });

  test('prestage adds prestage software version before state', async () => {
    const { db } = fx.fresh();
    await runOk(['--db', db, 'prestage-strategy', 'create', '--release', '24.09', '--for-sw-deploy']);
    const s = await showJson(db, 'strategy', 'show');
    const keys = Object.keys(s);
    expect(keys.indexOf('prestage software version')).toBe(keys.indexOf('state') - 1);
    expect(s['prestage software version']).toBe('24.09');
    const a = fx.fresh();
    await runOk(['--db', a.db, 'prestage-strategy', 'create']);
    // Without --release the server records the system controller's release; dcm knows none here
    // (no subcloud of this fleet has a software version), and the client prints no empty row.
    expect(Object.keys(await showJson(a.db, 'strategy', 'show'))).not.toContain('prestage software version');
  });

  test('a table shows None and False for unset values', async () => {
    const { db } = fx.fresh();
    const out = (await create(db, '--type', 'firmware')).stdout;
    expect(out).toMatch(/^\| subcloud apply type +\| None +\|$/m);
    expect(out).toMatch(/^\| stop on failure +\| False +\|$/m);
    expect(out).toMatch(/^\| state +\| initial +\|$/m);
  });
});

describe('aliases, show and delete', () => {
  test('patch-strategy create ≡ strategy create --type patch', async () => {
    const a = fx.fresh();
    const b = fx.fresh();
    const ra = await runOk(['--db', a.db, 'patch-strategy', 'create', '--max-parallel-subclouds', '3', '-f', 'json']);
    const rb = await runOk(['--db', b.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '3', '-f', 'json']);
    const strip = (t: string) => {
      const o = JSON.parse(t) as Record<string, unknown>;
      delete o.created_at;
      return o;
    };
    expect(strip(ra.stdout)).toEqual(strip(rb.stdout));
    expect(await steps(a.db)).toEqual(await steps(b.db));
    expect(await stageWindows(a.db)).toEqual(await stageWindows(b.db));
  });

  test('show --type of the strategy type, and each alias', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'kubernetes');
    expect((await showJson(db, 'strategy', 'show', '--type', 'kubernetes'))['strategy type']).toBe('kubernetes');
    expect((await showJson(db, 'kube-upgrade-strategy', 'show'))['strategy type']).toBe('kubernetes');
    const other = await run(['--db', db, 'patch-strategy', 'show']);
    expect(other.code).toBe(1);
    expect(other.stderr).toBe("error: Strategy of type 'patch' not found\n");
  });

  test('delete removes the live strategy, its stages, steps and history, keeps its record, and prints the record', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'patch');
    await withSql(db, (d) =>
      d
                .prepare(`INSERT INTO step_history (step_id, state, attempt, started_at, finished_at, outcome) SELECT id, 'pre check', 1, created_at, created_at, 'ok' FROM strategy_step`)
                .run(),
    );
    const steps = await withSql(db, (d) => d.prepare('SELECT count(*) FROM strategy_step').pluck().get()) as number;
    const out = await runOk(['--db', db, 'strategy', 'delete', '-f', 'json']);
    expect(JSON.parse(out.stdout)).toMatchObject({ 'strategy type': 'patch' });
    const counts = await withSql(db, async (d) => {
      const n: number[] = [];
      for (const t of ['strategy', 'strategy_stage', 'strategy_step', 'step_history', 'strategy_event']) n.push((await d.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n);
      return n;
    });
    expect(counts).toEqual([0, 0, 0, 0, 0]);
    // Kept whole (issue 34): its steps, their runs and the delete's own event, under its id.
    const kept = await withSql(db, (d) => d.prepare('SELECT id, type, steps, steps_json, runs_json, events_json FROM strategy_archive').all()) as Record<string, string | number>[];
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ type: 'patch', steps });
    expect(JSON.parse(kept[0].steps_json as string)).toHaveLength(steps);
    expect(JSON.parse(kept[0].runs_json as string)).toHaveLength(steps);
    expect((JSON.parse(kept[0].events_json as string) as { event: string }[]).map((e) => e.event)).toEqual(['deleted']);
    expect((await runOk(['--db', db, 'strategy-step', 'list', '-f', 'value', '-c', 'cloud'])).stdout).toBe('<none>\n');
    expect((await run(['--db', db, 'strategy', 'show'])).code).toBe(1);
    // The subclouds stay, and may now be deleted; a new strategy may be created.
    await runOk(['--db', db, 'subcloud', 'delete', 's1']);
    await create(db, '--type', 'kubernetes');
  });

  test.each(['complete', 'failed', 'aborted'])('delete in state %s', async (state) => {
    const { db } = fx.fresh();
    await runOk(['--db', db, 'patch-strategy', 'create']);
    await withSql(db, (d) => d.prepare('UPDATE strategy SET state = ?').run(state));
    await runOk(['--db', db, 'patch-strategy', 'delete']);
    expect(await withSql(db, (d) => d.prepare('SELECT count(*) AS n FROM strategy').get())).toEqual({ n: 0 });
  });
});

describe('strategy-step list and show', () => {
  test('--stage and --state (repeatable) filter, in step order', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'patch');
    await withSql(db, async (d) => {
      await d.prepare("UPDATE strategy_step SET state = 'complete' WHERE subcloud_id IN (SELECT id FROM subcloud WHERE name IN ('s1', 's7'))").run();
      await d.prepare("UPDATE strategy_step SET state = 'failed', details = 'pre check: boom' WHERE subcloud_id = (SELECT id FROM subcloud WHERE name = 's8')").run();
    });
    expect(await steps(db, '--stage', '3')).toEqual([
      ['s6', 3],
      ['s7', 3],
      ['s8', 3],
    ]);
    expect(await steps(db, '--state', 'complete')).toEqual([
      ['s1', 1],
      ['s7', 3],
    ]);
    expect(await steps(db, '--state', 'failed', '--state', 'initial')).toEqual([
      ['s4', 2],
      ['s6', 3],
      ['s8', 3],
    ]);
    expect(await steps(db, '--state', 'complete', '--stage', '3')).toEqual([['s7', 3]]);
    expect(await steps(db, '--stage', '9')).toEqual([['<none>', '<none>']]);
  });

  test('show: the step fields plus created_at and updated_at', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'patch');
    const s = await showJson(db, 'strategy-step', 'show', 's6');
    expect(Object.keys(s)).toEqual(['cloud', 'stage', 'state', 'details', 'started_at', 'finished_at', 'created_at', 'updated_at']);
    // The server's STAGE_MAP word (SwUpdateStrategyController.get); dcm's stage number only when named.
    expect(s).toMatchObject({ cloud: 's6', stage: 'Create', state: 'initial', started_at: null, finished_at: null });
    expect((await runOk(['--db', db, 'strategy-step', 'show', 's6', '-f', 'value', '-c', 'stage', '-c', 'stage number'])).stdout).toBe('Create\n3\n');
    expect(s.created_at).toMatch(TIME);
  });

  test('history is empty before apply', async () => {
    const { db } = fx.fresh();
    await create(db, '--type', 'patch');
    expect((await runOk(['--db', db, 'strategy-step', 'history', '-f', 'value', '-c', 'cloud'])).stdout).toBe('<none>\n');
    expect((await runOk(['--db', db, 'strategy-step', 'history', 's1', '-f', 'value', '-c', 'cloud'])).stdout).toBe('<none>\n');
  });
});
