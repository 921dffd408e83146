/**
 * Labels through the built binary: set by add, update and import, removed with `k=`, shown by
 * `subcloud show` (only when there are some: a subcloud without labels shows what dcmanager's
 * client shows), listed with `-c label.K`, selected with `--label` on list and on strategy create.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectRefused, Fixture, json } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let fx: Fixture;
beforeAll(() => {
  fx = new Fixture((db) => {
    dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'canary']);
    dcmQuickOk(['--db', db, 'subcloud', 'add', 'a1', 'a2', '--group', 'canary', '--label', 'rack=r1', '--label', 'ssh_port=2201']);
    dcmQuickOk(['--db', db, 'subcloud', 'add', 'b1', 'b2', '--oam-floating-ip', '10.0.0.9']);
  });
});
afterAll(() => fx.cleanup());

const show = (db: string, name: string) => json<Record<string, unknown>>(dcmQuickOk(['--db', db, 'subcloud', 'show', name, '-f', 'json']));

describe('labels', () => {
  test('add sets them; update changes one and removes one with k=; show prints them last', () => {
    const { db } = fx.fresh();
    expect(show(db, 'a1').labels).toBe('rack=r1;ssh_port=2201');
    const out = json<Record<string, unknown>>(dcmQuickOk(['--db', db, 'subcloud', 'update', 'a1', '--label', 'rack=r7', '--label', 'ssh_port=', '-f', 'json']));
    expect(out.labels).toBe('rack=r7');
    expect(Object.keys(out).slice(-2)).toEqual(['region_name', 'labels']);
    expect(show(db, 'a2').labels).toBe('rack=r1;ssh_port=2201');
    // The last label removed: the row is gone again, as for a subcloud that never had one.
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'a1', '--label', 'rack=']);
    expect('labels' in show(db, 'a1')).toBe(false);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'show', 'b1']).stdout).not.toContain('labels');
  });

  test('a malformed label is a usage error (exit 2), one line, and the file is left as it was', () => {
    const { dir, db } = fx.fresh();
    expectRefused(dir, ['--db', db, 'subcloud', 'update', 'a1', '--label', 'Rack=r1'], 2,
      "invalid label 'Rack=r1': a key is a lowercase letter, then lowercase letters, digits or _");
    expectRefused(dir, ['--db', db, 'subcloud', 'add', 'c1', '--label', 'rack'], 2, "invalid label 'rack': use KEY=VALUE, or KEY= to remove it");
    expectRefused(dir, ['--db', db, 'subcloud', 'list', '--label', 'rack'], 2, /^invalid label 'rack': use KEY=VALUE, or KEY= for the subclouds without it$/);
    expectRefused(dir, ['--db', db, 'strategy', 'create', '--type', 'patch', '--label', 'a;b=1'], 2, /^invalid label 'a;b=1': a key is/);
    expectRefused(dir, ['--db', db, 'strategy', 'create', '--type', 'patch', 'a1', '--label', 'rack=r1'], 2,
      'The cloud_name and label options are mutually exclusive.');
  });

  test('list --label selects (all must hold; k= those without it); -c adds oam_floating_ip and label.K', () => {
    const { db } = fx.fresh();
    const names = (...args: string[]) => dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name', ...args]).stdout;
    expect(names('--label', 'rack=r1')).toBe('a1\na2\n');
    expect(names('--label', 'rack=r1', '--label', 'ssh_port=2202')).toBe('<none>\n');
    expect(names('--label', 'rack=')).toBe('b1\nb2\n');
    // The columns dcmanager's client does not list come after its own, only when named.
    const r = dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'label.ssh_port', '-c', 'oam_floating_ip', '-c', 'name']);
    expect(r.stdout).toBe('a1 None 2201\na2 None 2201\nb1 10.0.0.9 None\nb2 10.0.0.9 None\n');
    const csv = dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'csv', '-c', 'name', '-c', 'labels']).stdout;
    expect(csv).toBe('"name","labels"\n"a1","rack=r1;ssh_port=2201"\n"a2","rack=r1;ssh_port=2201"\n"b1",""\n"b2",""\n');
    // Without those names, -d is dcmanager's detail list.
    expect(dcmQuickOk(['--db', db, 'subcloud', 'list', '-d', '-f', 'json']).stdout).not.toMatch(/labels|oam_floating_ip/);
  });

  test('import: a labels column (k=v;k2=v2, or an object in JSON) and label.K columns', () => {
    const { dir, db } = fx.fresh();
    dcmQuickOk(['--db', db, 'subcloud', 'import', '-'], { input: 'name,labels,label.ssh_port\nc1,rack=r3;zone=a,2203\nc2,,2204\n' });
    expect(show(db, 'c1').labels).toBe('rack=r3;ssh_port=2203;zone=a');
    expect(show(db, 'c2').labels).toBe('ssh_port=2204');
    dcmQuickOk(['--db', db, 'subcloud', 'import', '-'], { input: '{"name": "c3", "labels": {"rack": "r4", "u": 7}}\n' });
    expect(show(db, 'c3').labels).toBe('rack=r4;u=7');
    // A bad row fails the import with its line, and nothing is written.
    expectRefused(dir, ['--db', db, 'subcloud', 'import', '-'], 1, "line 3: invalid label 'zone=a;b': a value may not hold ';' (it separates labels)",
      { input: 'name,label.zone\nc4,a\nc5,a;b\n' });
    expectRefused(dir, ['--db', db, 'subcloud', 'import', '-'], 1, "line 2: label 'rack' is given twice (in 'labels' and in 'label.rack')",
      { input: 'name,labels,label.rack\nc6,rack=r1,r2\n' });
  });

  test('strategy create --label: only the selected subclouds get steps, each group its stage', () => {
    const { db } = fx.fresh();
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'b2', '--label', 'rack=r1']);
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'a2', '--label', 'rack=r2']);
    const dry = dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--label', 'rack=r1', '--dry-run', '-f', 'value', '-c', 'stage', '-c', 'subclouds']).stdout;
    // Groups in id order: Default (b2) before canary (a1).
    expect(dry).toBe('1 b2\n2 a1\ntotal None\n');
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--label', 'rack=r1']);
    expect(dcmQuickOk(['--db', db, 'strategy-step', 'list', '-f', 'value', '-c', 'cloud', '-c', 'stage number']).stdout).toBe('b2 1\na1 2\n');
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    const r = dcmQuick(['--db', db, 'strategy', 'create', '--type', 'patch', '--group', 'canary', '--label', 'rack=r9']);
    expect(r.stderr).toBe("warning: no subcloud to plan: group canary with --label rack=r9 holds none ('dcm subcloud list' shows the fleet; --db or DCM_DB names the database)\nerror: Strategy has no steps to apply\n");
    expect(r.code).toBe(1);
  });
});
