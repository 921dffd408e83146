/**
 * `subcloud add|import|list|show|update|delete` (SPEC §2, §4), in process through `main`.
 * Standard-input import and the many-names add run through the binary in test/e2e/inventory.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Fixture, TIME } from '../helpers/fleet.js';
import { run, runOk } from '../helpers/inprocess.js';

let fx: Fixture; // only its temporary directories: fresh() makes groups canary (2) and rest (3)
beforeAll(() => {
  fx = new Fixture(() => undefined);
});
afterAll(() => fx.cleanup());

async function fresh(): Promise<{ dir: string; db: string; dcm: (...args: string[]) => Promise<string> }> {
  const { dir, db } = fx.fresh(true);
  const dcm = async (...args: string[]) => (await runOk(['--db', db, ...args])).stdout;
  await dcm('subcloud-group', 'add', '--name', 'canary');
  await dcm('subcloud-group', 'add', '--name', 'rest', '--update_apply_type', 'serial');
  return { dir, db, dcm };
}

type Row = Record<string, string | number | null>;
const rows = (text: string) => JSON.parse(text) as Row[];

describe('subcloud add', () => {
  test('defaults: managed, online, complete, out-of-sync everywhere, group Default', async () => {
    const { dcm } = await fresh();
    const added = rows(await dcm('subcloud', 'add', 'a1', '-f', 'json'));
    expect(added).toEqual([
      {
        id: 1,
        name: 'a1',
        management: 'managed',
        availability: 'online',
        'deploy status': 'complete',
        sync: 'out-of-sync',
        'backup status': null,
        'prestage status': null,
      },
    ]);
    const show = JSON.parse(await dcm('subcloud', 'show', 'a1', '-f', 'json')) as Row;
    expect(show).toMatchObject({
      id: 1,
      name: 'a1',
      description: null,
      location: null,
      management: 'managed',
      availability: 'online',
      deploy_status: 'complete',
      group_id: 1,
      backup_status: null,
      region_name: null,
      patching_sync_status: 'out-of-sync',
      usm_sync_status: 'out-of-sync',
      kubernetes_sync_status: 'out-of-sync',
      'kube-rootca_sync_status': 'out-of-sync',
      firmware_sync_status: 'out-of-sync',
      updated_at: null,
    });
    expect(show.created_at).toMatch(TIME);
  });

  test('many names at once, every option applied to each, in the order given', async () => {
    const { dcm } = await fresh();
    const out = rows(
      await dcm(
        'subcloud', 'add', 'b3', 'b1', 'b2', '--group', 'canary', '--management', 'unmanaged', '--availability', 'offline',
        '--deploy-status', 'install-failed', '--software-version', '24.09', '--sync', 'all=in-sync', '--sync', 'firmware=unknown',
        '--description', 'edge site', '--location', 'Ottawa', '-f', 'json',
      ),
    );
    expect(out.map((r) => [r.id, r.name, r.sync])).toEqual([
      [1, 'b3', 'out-of-sync'],
      [2, 'b1', 'out-of-sync'],
      [3, 'b2', 'out-of-sync'],
    ]);
    const show = JSON.parse(await dcm('subcloud', 'show', 'b2', '-f', 'json')) as Row;
    expect(show).toMatchObject({
      group_id: 2,
      management: 'unmanaged',
      availability: 'offline',
      deploy_status: 'install-failed',
      software_version: '24.09',
      description: 'edge site',
      location: 'Ottawa',
      patching_sync_status: 'in-sync',
      firmware_sync_status: 'unknown',
    });
  });

  test('--group by id', async () => {
    const { dcm } = await fresh();
    await dcm('subcloud', 'add', 'c1', '--group', '3');
    expect(JSON.parse(await dcm('subcloud', 'show', 'c1', '-f', 'json'))).toMatchObject({ group_id: 3 });
  });

  test('all or none: one name taken, none added', async () => {
    const { db, dcm } = await fresh();
    await dcm('subcloud', 'add', 'd2');
    const r = await run(['--db', db, 'subcloud', 'add', 'd1', 'd2', 'd3']);
    expect(r.code).toBe(1);
    expect(rows(await dcm('subcloud', 'list', '-f', 'json')).map((x) => x.name)).toEqual(['d2']);
  });
});

describe('subcloud list, show', () => {
  test('list: the columns of SPEC §4, overall sync, --group filter', async () => {
    const { dcm } = await fresh();
    await dcm('subcloud', 'add', 'e1', '--sync', 'all=in-sync');
    await dcm('subcloud', 'add', 'e2', '--group', 'canary', '--sync', 'all=in-sync', '--sync', 'usm=unknown');
    await dcm('subcloud', 'add', 'e3', '--group', 'canary');
    const all = rows(await dcm('subcloud', 'list', '-f', 'json'));
    expect(Object.keys(all[0])).toEqual(['id', 'name', 'management', 'availability', 'deploy status', 'sync', 'backup status', 'prestage status']);
    expect(all.map((r) => [r.name, r.sync])).toEqual([
      ['e1', 'in-sync'],
      ['e2', 'out-of-sync'], // in-sync beside unknown, as dcmanager's API computes it,
      ['e3', 'out-of-sync'],
    ]);
    expect(rows(await dcm('subcloud', 'list', '--group', 'canary', '-f', 'json')).map((r) => r.name)).toEqual(['e2', 'e3']);
    // dcmanager's client prints one <none> row for an empty list, in every format.
    expect(rows(await dcm('subcloud', 'list', '--group', 'rest', '-f', 'json'))).toEqual([
      Object.fromEntries(Object.keys(all[0]).map((k) => [k, '<none>'])),
    ]);
  });

  test('list: secondary and secondary-failed only with --all; -d the detail columns', async () => {
    const { dcm } = await fresh();
    await dcm('subcloud', 'add', 'k1');
    await dcm('subcloud', 'add', 'k2', '--deploy-status', 'secondary');
    await dcm('subcloud', 'add', 'k3', '--deploy-status', 'secondary-failed', '--backup-status', 'complete-central');
    expect(rows(await dcm('subcloud', 'list', '-f', 'json')).map((r) => r.name)).toEqual(['k1']);
    const all = rows(await dcm('subcloud', 'list', '--all', '-f', 'json'));
    expect(all.map((r) => [r.name, r['backup status']])).toEqual([['k1', null], ['k2', null], ['k3', 'complete-central']]);
    const detail = rows(await dcm('subcloud', 'list', '-d', '--all', '-f', 'json'));
    expect(Object.keys(detail[0])).toEqual([
      'id', 'name', 'description', 'location', 'software_version', 'management', 'availability', 'deploy_status', 'sync',
      'management_subnet', 'management_start_ip', 'management_end_ip', 'management_gateway_ip', 'systemcontroller_gateway_ip',
      'group_id', 'peer_group_id', 'created_at', 'updated_at', 'backup_status', 'backup_datetime', 'prestage_status', 'prestage_versions',
    ]);
    // dcmanager's client reads -c against the detail columns.
    expect(await dcm('subcloud', 'list', '-c', 'deploy_status', '-c', 'name', '-f', 'value')).toBe('k1 complete\n');
  });

  test('show: every field, one <endpoint>_sync_status row per endpoint', async () => {
    const { dcm } = await fresh();
    await dcm('subcloud', 'add', 'f1');
    const fields = Object.keys(JSON.parse(await dcm('subcloud', 'show', 'f1', '-f', 'json')) as Row);
    // dcmanager's detail_show_format, in its order.
    expect(fields).toEqual([
      'id', 'name', 'description', 'location', 'software_version', 'management', 'availability', 'deploy_status',
      'management_subnet', 'management_start_ip', 'management_end_ip', 'management_gateway_ip', 'systemcontroller_gateway_ip',
      'group_id', 'peer_group_id', 'created_at', 'updated_at', 'backup_status', 'backup_datetime', 'prestage_status',
      // The endpoint rows in the server's order (its query sorts by endpoint type).
      'prestage_versions', 'firmware_sync_status', 'kube-rootca_sync_status', 'kubernetes_sync_status', 'patching_sync_status',
      'usm_sync_status', 'region_name',
    ]);
    // -d: the two fields only when known (dcmanager's detail_format leaves out `unavailable`, `unknown`).
    expect(Object.keys(JSON.parse(await dcm('subcloud', 'show', 'f1', '-d', '-f', 'json')) as Row)).toEqual(fields);
    await dcm('subcloud', 'update', 'f1', '--oam-floating-ip', '10.0.0.9', '--deploy-config-sync-status', 'deployed');
    const detail = Object.keys(JSON.parse(await dcm('subcloud', 'show', 'f1', '-d', '-f', 'json')) as Row);
    expect(detail.slice(-3)).toEqual(['oam_floating_ip', 'deploy_config_sync_status', 'region_name']);
    await dcm('subcloud', 'update', 'f1', '--oam-floating-ip', 'unavailable', '--deploy-config-sync-status', 'unknown');
    expect(Object.keys(JSON.parse(await dcm('subcloud', 'show', 'f1', '-d', '-f', 'json')) as Row)).toEqual(fields);
  });

  test('the fields dcm only keeps: accepted by add, update and import, printed by show', async () => {
    const { dcm } = await fresh();
    await dcm('subcloud', 'add', 'm1', '--management-subnet', '192.168.101.0/24', '--peer-group-id', '7', '--region-name', 'r1');
    await dcm('subcloud', 'update', 'm1', '--backup-status', 'complete-central', '--oam-floating-ip', '10.0.0.2');
    expect(JSON.parse(await dcm('subcloud', 'show', 'm1', '-d', '-f', 'json'))).toMatchObject({
      management_subnet: '192.168.101.0/24',
      peer_group_id: 7,
      region_name: 'r1',
      backup_status: 'complete-central',
      oam_floating_ip: '10.0.0.2',
    });
  });
});

describe('subcloud update, delete', () => {
  test('update several names; updated_at is set; other fields stay', async () => {
    const { dcm } = await fresh();
    await dcm('subcloud', 'add', 'g1', 'g2', 'g3', '--description', 'keep me');
    await dcm('subcloud', 'update', 'g1', 'g3', '--availability', 'offline', '--sync', 'patching=in-sync', '--group', 'rest');
    const list = rows(await dcm('subcloud', 'list', '-f', 'json'));
    expect(list.map((r) => [r.name, r.availability])).toEqual([
      ['g1', 'offline'],
      ['g2', 'online'],
      ['g3', 'offline'],
    ]);
    const g1 = JSON.parse(await dcm('subcloud', 'show', 'g1', '-f', 'json')) as Row;
    expect(g1).toMatchObject({ description: 'keep me', group_id: 3, patching_sync_status: 'in-sync', usm_sync_status: 'out-of-sync' });
    expect(g1.updated_at).toMatch(TIME);
    expect(JSON.parse(await dcm('subcloud', 'show', 'g2', '-f', 'json'))).toMatchObject({ updated_at: null, group_id: 1 });
  });

  test('update of one name prints the subcloud as show does (dcmanager)', async () => {
    const { dcm } = await fresh();
    await dcm('subcloud', 'add', 'n1');
    const updated = await dcm('subcloud', 'update', 'n1', '--location', 'Ottawa', '-f', 'json');
    const shown = await dcm('subcloud', 'show', 'n1', '-f', 'json');
    expect(updated).toBe(shown);
    expect(JSON.parse(updated)).toMatchObject({ location: 'Ottawa' });
  });

  test('delete several names', async () => {
    const { dcm } = await fresh();
    await dcm('subcloud', 'add', 'h1', 'h2', 'h3');
    // dcmanager's `subcloud delete` prints nothing, whatever the format.
    expect(await dcm('subcloud', 'delete', 'h1', 'h3', '-f', 'json')).toBe('');
    expect(rows(await dcm('subcloud', 'list', '-f', 'json')).map((r) => r.name)).toEqual(['h2']);
  });
});

describe('subcloud import', () => {
  async function importFile(name: string, text: string): Promise<{ db: string; out: string; dcm: (...a: string[]) => Promise<string> }> {
    const { dir, db, dcm } = await fresh();
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return { db, out: await dcm('subcloud', 'import', file, '-f', 'json'), dcm };
  }

  test('CSV with a header', async () => {
    const { out, dcm } = await importFile(
      'fleet.csv',
      'name,group,management,availability,deploy_status,patching,description\n' +
        'i1,canary,managed,online,complete,in-sync,"north, rack 1"\n' +
        'i2,,unmanaged,,,,\n' +
        'i3,3,managed,offline,,unknown,\n',
    );
    expect(JSON.parse(out)).toEqual([{ imported: 3 }]);
    const list = rows(await dcm('subcloud', 'list', '-f', 'json'));
    expect(list.map((r) => [r.id, r.name, r.management, r.availability])).toEqual([
      [1, 'i1', 'managed', 'online'],
      [2, 'i2', 'unmanaged', 'online'],
      [3, 'i3', 'managed', 'offline'],
    ]);
    expect(JSON.parse(await dcm('subcloud', 'show', 'i1', '-f', 'json'))).toMatchObject({
      group_id: 2,
      patching_sync_status: 'in-sync',
      description: 'north, rack 1',
    });
    expect(JSON.parse(await dcm('subcloud', 'show', 'i3', '-f', 'json'))).toMatchObject({ group_id: 3, patching_sync_status: 'unknown' });
  });

  test('a JSON array', async () => {
    const { out, dcm } = await importFile('fleet.json', JSON.stringify([{ name: 'j1', group: 'rest' }, { name: 'j2', sync: 'in-sync' }], null, 2));
    expect(JSON.parse(out)).toEqual([{ imported: 2 }]);
    expect(rows(await dcm('subcloud', 'list', '-f', 'json')).map((r) => [r.name, r.sync])).toEqual([
      ['j1', 'out-of-sync'],
      ['j2', 'in-sync'],
    ]);
  });

  test('JSON lines', async () => {
    const { out, dcm } = await importFile('fleet.jsonl', '{"name":"k1"}\n{"name":"k2","availability":"offline"}\n\n{"name":"k3"}\n');
    expect(JSON.parse(out)).toEqual([{ imported: 3 }]);
    expect(rows(await dcm('subcloud', 'list', '-f', 'json')).map((r) => [r.name, r.availability])).toEqual([
      ['k1', 'online'],
      ['k2', 'offline'],
      ['k3', 'online'],
    ]);
  });

  test('all or none: a bad last row leaves the file as it was', async () => {
    const { dir, db, dcm } = await fresh();
    await dcm('subcloud', 'add', 'x0');
    const before = fs.readFileSync(db);
    const file = path.join(dir, 'bad.csv');
    fs.writeFileSync(file, `name\n${Array.from({ length: 50 }, (_, i) => `x${i + 1}`).join('\n')}\nx0\n`);
    const r = await run(['--db', db, 'subcloud', 'import', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: line 52: Subcloud x0 already exists\n');
    expect(fs.readFileSync(db).equals(before)).toBe(true);
  });
});
