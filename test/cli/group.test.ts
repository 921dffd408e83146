/** `subcloud-group add|list|show|update|delete|list-subclouds` (SPEC §4), in process through `main`. */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Fixture, TIME } from '../helpers/fleet.js';
import { run, runOk } from '../helpers/inprocess.js';

let fx: Fixture; // only its temporary directories: every test starts with no file
beforeAll(() => {
  fx = new Fixture(() => undefined);
});
afterAll(() => fx.cleanup());

function fresh() {
  const { db } = fx.fresh(true);
  const dcm = async (...args: string[]) => (await runOk(['--db', db, ...args])).stdout;
  const j = async (...args: string[]) => JSON.parse(await dcm(...args, '-f', 'json')) as Record<string, unknown> & Record<string, unknown>[];
  return { db, dcm, j };
}

describe('subcloud-group', () => {
  test('a new file has Default: id 1, parallel, 2', async () => {
    const { j } = fresh();
    await j('subcloud', 'add', 'x');
    const d = await j('subcloud-group', 'show', 'Default');
    expect(Object.keys(d)).toEqual(['id', 'name', 'description', 'update apply type', 'max parallel subclouds', 'created_at', 'updated_at']);
    expect(d).toMatchObject({ id: 1, name: 'Default', 'update apply type': 'parallel', 'max parallel subclouds': 2 });
    expect(await j('subcloud-group', 'show', '1')).toEqual(d);
  });

  test('add: defaults, and every option in underscore and dashed spellings', async () => {
    const { j } = fresh();
    expect(await j('subcloud-group', 'add', '--name', 'g1')).toMatchObject({
      id: 2,
      name: 'g1',
      description: 'No description provided',
      'update apply type': 'parallel',
      'max parallel subclouds': 2,
      updated_at: null,
    });
    expect(await j('subcloud-group', 'add', '--name', 'g2', '--description', 'canaries', '--update_apply_type', 'serial', '--max_parallel_subclouds', '5000')).toMatchObject({
      id: 3,
      description: 'canaries',
      'update apply type': 'serial',
      'max parallel subclouds': 5000,
    });
    expect(await j('subcloud-group', 'add', '--name', 'g3', '--update-apply-type', 'serial', '--max-parallel-subclouds', '1')).toMatchObject({
      'update apply type': 'serial',
      'max parallel subclouds': 1,
    });
  });

  test('list: id, name, description', async () => {
    const { j } = fresh();
    await j('subcloud-group', 'add', '--name', 'g1', '--description', 'one');
    expect(await j('subcloud-group', 'list')).toEqual([
      { id: 1, name: 'Default', description: 'Default Subcloud Group' },
      { id: 2, name: 'g1', description: 'one' },
    ]);
  });

  test('show by name or id', async () => {
    const { j } = fresh();
    await j('subcloud-group', 'add', '--name', 'g1');
    const byName = await j('subcloud-group', 'show', 'g1');
    expect(await j('subcloud-group', 'show', '2')).toEqual(byName);
    expect(byName.created_at).toMatch(TIME);
  });

  test('update: each field; "Nothing to update" with no options', async () => {
    const { db, j } = fresh();
    await j('subcloud-group', 'add', '--name', 'g1');
    const u = await j('subcloud-group', 'update', 'g1', '--name', 'g9', '--description', 'd', '--update_apply_type', 'serial', '--max_parallel_subclouds', '7');
    expect(u).toMatchObject({ id: 2, name: 'g9', description: 'd', 'update apply type': 'serial', 'max parallel subclouds': 7 });
    expect(u.updated_at).toMatch(TIME);
    expect(await j('subcloud-group', 'update', '2', '--max-parallel-subclouds', '3')).toMatchObject({ name: 'g9', 'max parallel subclouds': 3 });
    const r = await run(['--db', db, 'subcloud-group', 'update', 'g9']);
    expect([r.code, r.stderr]).toEqual([1, 'error: Nothing to update\n']);
    // Default's settings may change (not its name).
    expect(await j('subcloud-group', 'update', 'Default', '--max_parallel_subclouds', '10')).toMatchObject({ 'max parallel subclouds': 10 });
  });

  test('delete: an empty group; refused for Default or a group with subclouds', async () => {
    const { db, j, dcm } = fresh();
    await j('subcloud-group', 'add', '--name', 'g1');
    await j('subcloud-group', 'add', '--name', 'g2');
    await j('subcloud', 'add', 's1', '--group', 'g2');
    // dcmanager's `subcloud-group delete` prints nothing.
    expect(await dcm('subcloud-group', 'delete', 'g1', '-f', 'json')).toBe('');
    expect((await j('subcloud-group', 'list')).map((g) => g.name)).toEqual(['Default', 'g2']);
    expect((await run(['--db', db, 'subcloud-group', 'delete', 'g2'])).code).toBe(1);
    expect((await run(['--db', db, 'subcloud-group', 'delete', 'Default'])).code).toBe(1);
    await j('subcloud', 'update', 's1', '--group', 'Default');
    await dcm('subcloud-group', 'delete', 'g2');
  });

  test('list-subclouds: the subclouds of the group, with dcmanager\'s detail columns', async () => {
    const { j, dcm } = fresh();
    await j('subcloud-group', 'add', '--name', 'g1');
    await j('subcloud', 'add', 's1', 's3', '--group', 'g1');
    await j('subcloud', 'add', 's2');
    const listed = await j('subcloud-group', 'list-subclouds', 'g1');
    expect(Object.keys(listed[0])).toEqual([
      'id', 'name', 'description', 'location', 'software_version', 'management', 'availability', 'deploy_status',
      'management_subnet', 'management_start_ip', 'management_end_ip', 'management_gateway_ip', 'systemcontroller_gateway_ip',
      'group_id', 'peer_group_id', 'created_at', 'updated_at', 'backup_status', 'backup_datetime', 'prestage_status', 'prestage_versions',
    ]);
    expect((await j('subcloud-group', 'list-subclouds', 'g1')).map((s) => s.name)).toEqual(['s1', 's3']);
    expect((await j('subcloud-group', 'list-subclouds', 'Default')).map((s) => s.name)).toEqual(['s2']);
    await dcm('subcloud', 'delete', 's1', 's3');
    expect(await dcm('subcloud-group', 'list-subclouds', 'g1', '-f', 'value', '-c', 'name', '-c', 'id')).toBe('<none> <none>\n');
  });
});
