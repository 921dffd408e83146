/**
 * `dcm strategy-config` end to end (SPEC §4, dcmanager's sw-update-options): update then show and
 * list in every format, a subcloud's own row against the default, delete, the errors dcmanager's
 * API gives (with the file unchanged), and the options the sim driver receives during apply.
 */
import { afterAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import { dcm, expectRefused, Fixture, json, makeFleet, TIME, withSites, withSql } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const fx = new Fixture(makeFleet);
afterAll(() => fx.cleanup());

const SET_S1 = [
  '--storage-apply-type', 'serial',
  '--worker-apply-type', 'serial',
  '--max-parallel-workers', '4',
  '--alarm-restriction-type', 'strict',
  '--default-instance-action', 'migrate',
];
const SET_DEFAULT = [
  '--storage-apply-type', 'parallel',
  '--worker-apply-type', 'serial',
  '--max-parallel-workers', '7',
  '--alarm-restriction-type', 'strict',
  '--default-instance-action', 'stop-start',
];

const LIST_COLUMNS = ['cloud', 'storage apply type', 'worker apply type', 'max parallel workers', 'alarm restriction type', 'default instance action'];
const BUILTIN = {
  cloud: 'all clouds default',
  'storage apply type': 'parallel',
  'worker apply type': 'parallel',
  'max parallel workers': 10,
  'alarm restriction type': 'relaxed',
  'default instance action': 'stop-start',
};

describe('strategy-config: the default row', () => {
  test('before any update: dcmanager defaults, no times, in every format; a missing file is not created', () => {
    const t = fx.fresh(true);
    const show = dcmQuickOk(['--db', t.db, 'strategy-config', 'show', '-f', 'json']);
    expect(json(show)).toEqual({ ...BUILTIN, created_at: null, updated_at: null });
    expect(Object.keys(json<object>(show))).toEqual([...LIST_COLUMNS, 'created_at', 'updated_at']);
    const list = dcmQuickOk(['--db', t.db, 'strategy-config', 'list', '-f', 'json']);
    expect(json(list)).toEqual([BUILTIN]);
    expect(dcmQuickOk(['--db', t.db, 'strategy-config', 'list', '-f', 'value']).stdout).toBe(
      'all clouds default parallel parallel 10 relaxed stop-start\n',
    );
    const table = dcmQuickOk(['--db', t.db, 'strategy-config', 'show']).stdout;
    expect(table).toContain('| cloud                   | all clouds default |\n');
    expect(table).toContain('| created_at              | None               |\n');
    const csv = dcmQuickOk(['--db', t.db, 'strategy-config', 'list', '-f', 'csv']).stdout.split('\n');
    expect(csv[0]).toBe(LIST_COLUMNS.map((c) => `"${c}"`).join(','));
    expect(csv[1]).toMatch(/^"all clouds default","parallel","parallel",10,"relaxed","stop-start"\r?$/);
    expect(fs.existsSync(t.db)).toBe(false);
    // RegionOne and SystemController are the default, as dcmanager's API takes them.
    expect(json(dcmQuickOk(['--db', t.db, 'strategy-config', 'show', 'RegionOne', '-f', 'json']))).toMatchObject(BUILTIN);
    expect(json(dcmQuickOk(['--db', t.db, 'strategy-config', 'show', 'SystemController', '-f', 'json']))).toMatchObject(BUILTIN);
  });

  test('update without a cloud changes the default; delete RegionOne puts the built-in defaults back', () => {
    const t = fx.fresh();
    const up = json<Record<string, unknown>>(dcmQuickOk(['--db', t.db, 'strategy-config', 'update', ...SET_DEFAULT, '-f', 'json']));
    expect(up).toMatchObject({
      cloud: 'all clouds default',
      'worker apply type': 'serial',
      'max parallel workers': 7,
      'alarm restriction type': 'strict',
    });
    // The seeded row has no creation time, as dcmanager's; the update stamps updated_at.
    expect(up.updated_at).toMatch(TIME);
    expect(json(dcmQuickOk(['--db', t.db, 'strategy-config', 'show', '-f', 'json']))).toEqual(up);
    expect(json<unknown[]>(dcmQuickOk(['--db', t.db, 'strategy-config', 'list', '-f', 'json']))[0]).toMatchObject({ 'max parallel workers': 7 });

    const del = dcmQuick(['--db', t.db, 'strategy-config', 'delete', 'RegionOne', '--yes']);
    expect(del).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(json(dcmQuickOk(['--db', t.db, 'strategy-config', 'show', '-f', 'json']))).toEqual({ ...BUILTIN, created_at: null, updated_at: null });
    // Deleting it again is no error (dcmanager ignores a missing default row).
    expect(dcmQuick(['--db', t.db, 'strategy-config', 'delete', 'SystemController']).code).toBe(0);
    // Created again by the next update, now with a creation time.
    const again = json<Record<string, unknown>>(dcmQuickOk(['--db', t.db, 'strategy-config', 'update', ...SET_DEFAULT, '-f', 'json']));
    expect(again.created_at).toMatch(TIME);
    expect(again.updated_at).toBeNull();
  });
});

describe("strategy-config: a subcloud's own row", () => {
  test('update, then show and list; by name or by id; another update changes it in place', () => {
    const t = fx.fresh();
    const up = json<Record<string, unknown>>(dcmQuickOk(['--db', t.db, 'strategy-config', 'update', 's6', ...SET_S1, '-f', 'json']));
    expect(up).toEqual({
      cloud: 's6',
      'storage apply type': 'serial',
      'worker apply type': 'serial',
      'max parallel workers': 4,
      'alarm restriction type': 'strict',
      'default instance action': 'migrate',
      created_at: expect.stringMatching(TIME),
      updated_at: null,
    });
    dcmQuickOk(['--db', t.db, 'strategy-config', 'update', '1', ...SET_S1]); // s1 by its id
    expect(json(dcmQuickOk(['--db', t.db, 'strategy-config', 'show', 's6', '-f', 'json']))).toEqual(up);
    expect(dcmQuickOk(['--db', t.db, 'strategy-config', 'list', '-f', 'value', '-c', 'cloud']).stdout).toBe('all clouds default\ns1\ns6\n');
    // The default row is untouched by a subcloud's update.
    expect(json(dcmQuickOk(['--db', t.db, 'strategy-config', 'show', '-f', 'json']))).toMatchObject(BUILTIN);

    const changed = json<Record<string, unknown>>(
      dcmQuickOk(['--db', t.db, 'strategy-config', 'update', 's6', ...SET_DEFAULT, '-f', 'json']),
    );
    expect(changed).toMatchObject({ cloud: 's6', 'max parallel workers': 7, created_at: up.created_at });
    expect(changed.updated_at).toMatch(TIME);
    expect(json<unknown[]>(dcmQuickOk(['--db', t.db, 'strategy-config', 'list', '-f', 'json']))).toHaveLength(3);
  });

  test("show of a subcloud without its own row, unknown clouds, deletes: dcmanager's answers, file unchanged", () => {
    const t = fx.fresh();
    dcmQuickOk(['--db', t.db, 'strategy-config', 'update', 's6', ...SET_S1]);
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'show', 's1'], 1, 'No options found for Subcloud with id 1, defaults will be used.');
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'show', 'nosuch'], 1, 'Subcloud not found');
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'show', '99'], 1, 'Subcloud not found');
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'update', 'nosuch', ...SET_S1], 1, 'Unable to update patch options for subcloud nosuch: Subcloud not found');
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'delete', 'nosuch'], 1, 'Unable to delete strategy config: Subcloud not found');
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'delete', 's1'], 1, 'Unable to delete strategy config: Subcloud patch options not found');

    const del = dcmQuick(['--db', t.db, 'strategy-config', 'delete', 's6', '--yes']);
    expect(del).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(dcmQuickOk(['--db', t.db, 'strategy-config', 'list', '-f', 'value', '-c', 'cloud']).stdout).toBe('all clouds default\n');
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'show', 's6'], 1, /^No options found for Subcloud with id 6,/);
  });

  test('usage errors exit 2 (an unknown -c exits 1, as cliff) before the file is touched: every option required, fixed sets, integers', () => {
    const t = fx.fresh();
    const without = (flag: string) => {
      const i = SET_S1.indexOf(flag);
      return [...SET_S1.slice(0, i), ...SET_S1.slice(i + 2)];
    };
    for (const flag of ['--storage-apply-type', '--worker-apply-type', '--max-parallel-workers', '--alarm-restriction-type', '--default-instance-action']) {
      expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'update', 's1', ...without(flag)], 2, new RegExp(`required option '${flag} `));
    }
    const bad = (flag: string, value: string) => SET_S1.map((v, i) => (SET_S1[i - 1] === flag ? value : v));
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'update', ...bad('--storage-apply-type', 'both')], 2, /parallel, serial/);
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'update', ...bad('--alarm-restriction-type', 'loose')], 2, /strict, relaxed/);
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'update', ...bad('--default-instance-action', 'pause')], 2, /stop-start, migrate/);
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'update', ...bad('--max-parallel-workers', '2.5')], 2, /not an integer/);
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'delete'], 2, /missing required argument 'cloud'/);
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'show', '-c', 'nosuch'], 1, /No recognized column names in \['nosuch'\]/);
    // A write whose result cannot be shown is refused before its commit.
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'update', 's1', ...SET_S1, '-c', 'nosuch'], 1, /No recognized column names in \['nosuch'\]/);
  });

  test("a subcloud's row goes with the subcloud (subcloud delete), as dcmanager's ON DELETE CASCADE", async () => {
    const t = fx.fresh();
    dcmQuickOk(['--db', t.db, 'strategy-config', 'update', 's7', ...SET_S1]);
    dcmQuickOk(['--db', t.db, 'subcloud', 'delete', 's7']);
    expect(dcmQuickOk(['--db', t.db, 'strategy-config', 'list', '-f', 'value', '-c', 'cloud']).stdout).toBe('all clouds default\n');
    expect(await withSql(t.db, (d) => d.prepare('SELECT COUNT(*) FROM strategy_config').pluck().get())).toBe(0);
    // A new subcloud of the same name starts without options of its own.
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's7']);
    expectRefused(t.dir, ['--db', t.db, 'strategy-config', 'show', 's7'], 1, /^No options found for Subcloud with id \d+, defaults will be used\.$/);
  });
});

describe('strategy-config: what drivers receive', () => {
  test("during apply, a subcloud with its own row gets its options, the others the default row's", async () => {
    const t = fx.fresh();
    dcmQuickOk(['--db', t.db, 'strategy-config', 'update', ...SET_DEFAULT]);
    dcmQuickOk(['--db', t.db, 'strategy-config', 'update', 's6', ...SET_S1]);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
    const r = dcm(['--db', t.db, '-q', 'strategy', 'apply']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const got = await withSites(t.db, async (d) =>
      Object.fromEntries(
        (await d.prepare('SELECT name, options FROM sim_site ORDER BY name').all() as { name: string; options: string }[]).map((x) => [
          x.name,
          JSON.parse(x.options) as unknown,
        ]),
      ),
    );
    // s1, s4, s6, s7, s8 have steps (s2 unmanaged, s3 in-sync, s5 offline).
    expect(Object.keys(got)).toEqual(['s1', 's4', 's6', 's7', 's8']);
    const own = {
      storage_apply_type: 'serial',
      worker_apply_type: 'serial',
      max_parallel_workers: 4,
      alarm_restriction_type: 'strict',
      default_instance_action: 'migrate',
    };
    const def = {
      storage_apply_type: 'parallel',
      worker_apply_type: 'serial',
      max_parallel_workers: 7,
      alarm_restriction_type: 'strict',
      default_instance_action: 'stop-start',
    };
    expect(got).toEqual({ s1: def, s4: def, s6: own, s7: def, s8: def });
  });

  test('with the default row deleted, subclouds without a row get the built-in defaults', async () => {
    const t = fx.fresh();
    dcmQuickOk(['--db', t.db, 'strategy-config', 'update', ...SET_DEFAULT]);
    dcmQuickOk(['--db', t.db, 'strategy-config', 'delete', 'RegionOne']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', 's1', '--sim-latency', '0']);
    expect(dcm(['--db', t.db, '-q', 'strategy', 'apply']).code).toBe(0);
    const options = await withSites(t.db, async (d) => await d.prepare("SELECT options FROM sim_site WHERE name = 's1'").pluck().get() as string);
    expect(JSON.parse(options)).toEqual({
      storage_apply_type: 'parallel',
      worker_apply_type: 'parallel',
      max_parallel_workers: 10,
      alarm_restriction_type: 'relaxed',
      default_instance_action: 'stop-start',
    });
  });
});
