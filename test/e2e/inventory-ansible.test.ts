/**
 * `dcm subcloud inventory --ansible`, read by Ansible itself (`ansible-inventory --list`): a host
 * per subcloud, `dcm_<field>` and the labels as host variables, `ansible_host` from the OAM
 * floating IP, a group per subcloud group whose name Ansible takes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectErrorLine, Fixture } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

interface Listed {
  _meta: { hostvars: Record<string, Record<string, unknown>> };
  all: { children: string[] };
  [group: string]: { hosts?: string[]; children?: string[] } | Listed['_meta'];
}

/** What Ansible reads from the file: its own --list JSON. */
function ansibleList(file: string): Listed {
  // CI installs ansible-core (.ci/run); a machine without it must say so, not pass in silence.
  const which = spawnSync('sh', ['-c', 'command -v ansible-inventory'], { encoding: 'utf8' });
  if (which.status !== 0) throw new Error('ansible-inventory is not installed: apt-get install -y ansible-core (as .ci/run does)');
  const r = spawnSync('ansible-inventory', ['-i', file, '--list'], {
    encoding: 'utf8',
    // Any parse problem is an error here, never a warning and an empty inventory.
    env: { ...process.env, ANSIBLE_INVENTORY_UNPARSED_FAILED: 'true', ANSIBLE_INVENTORY_ENABLED: 'yaml', ANSIBLE_NOCOLOR: '1' },
  });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as Listed;
}

let fx: Fixture;
beforeAll(() => {
  fx = new Fixture((db) => {
    dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'canary']);
    dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'edge sites']);
    dcmQuickOk(['--db', db, 'subcloud', 'add', 'site1', '--group', 'canary', '--oam-floating-ip', '10.2.0.1', '--location', 'Zürich: "rack 1"',
      '--label', 'ansible_port=2201', '--label', 'rack=yes']);
    dcmQuickOk(['--db', db, 'subcloud', 'add', 'site2', '--group', 'edge sites', '--label', 'ansible_host=site2.example']);
    dcmQuickOk(['--db', db, 'subcloud', 'add', 'site3', '--deploy-status', 'secondary']);
  });
});
afterAll(() => fx.cleanup());

describe('subcloud inventory --ansible', () => {
  test('ansible-inventory reads the hosts, their variables and the groups', () => {
    const { dir, db } = fx.fresh();
    const r = dcmQuickOk(['--db', db, 'subcloud', 'inventory', '--ansible']);
    expect(r.stderr).toBe("warning: subcloud group 'edge sites' is not an Ansible group name (a letter or _, then letters, digits, _): its subclouds are in all only\n");
    const file = path.join(dir, 'inventory.yaml');
    fs.writeFileSync(file, r.stdout);
    const inv = ansibleList(file);
    const vars = inv._meta.hostvars;
    // A secondary subcloud is left out, as `subcloud list` leaves it out.
    expect(Object.keys(vars).sort()).toEqual(['site1', 'site2']);
    expect(vars.site1).toMatchObject({
      ansible_host: '10.2.0.1',
      ansible_port: '2201',
      rack: 'yes',
      dcm_name: 'site1',
      dcm_group: 'canary',
      dcm_location: 'Zürich: "rack 1"',
      dcm_oam_floating_ip: '10.2.0.1',
      dcm_deploy_status: 'complete',
      dcm_patching_sync_status: 'out-of-sync',
    });
    expect(typeof vars.site1.dcm_id).toBe('number');
    // Unset fields are left out; a label ansible_host is the operator's word.
    expect(vars.site2.ansible_host).toBe('site2.example');
    expect('dcm_oam_floating_ip' in vars.site2).toBe(false);
    expect((inv.canary as { hosts: string[] }).hosts).toEqual(['site1']);
    expect(inv.all.children).toContain('canary');
    expect(inv.all.children).not.toContain('edge sites');
    // --all takes the secondary subcloud too; --label and --group narrow it.
    fs.writeFileSync(file, dcmQuickOk(['--db', db, 'subcloud', 'inventory', '--ansible', '--all']).stdout);
    expect(Object.keys(ansibleList(file)._meta.hostvars).sort()).toEqual(['site1', 'site2', 'site3']);
    fs.writeFileSync(file, dcmQuickOk(['--db', db, 'subcloud', 'inventory', '--ansible', '--label', 'rack=yes']).stdout);
    expect(Object.keys(ansibleList(file)._meta.hostvars)).toEqual(['site1']);
  });

  test('an empty fleet is an empty inventory; without --ansible, a usage error', () => {
    const { dir, db } = fx.fresh(true);
    const file = path.join(dir, 'inventory.yaml');
    fs.writeFileSync(file, dcmQuickOk(['--db', db, 'subcloud', 'inventory', '--ansible']).stdout);
    expect(ansibleList(file)._meta.hostvars).toEqual({});
    expect(fs.existsSync(db)).toBe(false);
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'inventory']), 2, 'give the inventory format: --ansible');
  });
});
