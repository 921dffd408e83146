/**
 * Sites with addresses and variables: every subcloud field a placeholder and a `DCM_SUB_<FIELD>`
 * variable, every label `{label.KEY}` and `DCM_LABEL_<KEY>`, and `strategy create --label` taking
 * only the labelled subclouds. Judged by what each run wrote itself.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm} from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { SUBCLOUD_FIELDS } from '../../src/drivers/exec/placeholders.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => f?.cleanup());

const db = () => ['--db', f.db];

function envOf(file: string): Record<string, string> {
  return Object.fromEntries(
    fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

describe('exec driver: a site’s fields and labels', () => {
  // Claim, README "Running real updates", what a run sees: DCM_SUB_<FIELD> for each field that is set, DCM_LABEL_<KEY> per label;
  // the config: {oam_floating_ip} and every other field, {label.KEY}.
  test('placeholders and variables of the subcloud’s fields and labels; --label picks the sites', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud-group', 'add', '--name', 'edge']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'site1', '--group', 'edge', '--oam-floating-ip', '10.1.0.1', '--management-start-ip', '192.168.1.2',
      '--region-name', 'RegionSite1', '--label', 'ssh_port=2201', '--label', 'rollout=yes']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'site2', '--label', 'rollout=yes', '--label', 'jump=bastion one']);
    dcmQuickOk([...db(), 'subcloud', 'add', 'other', '--oam-floating-ip', '10.1.0.9']);
    const out = path.join(f.dir, 'out.txt');
    const envDir = path.join(f.dir, 'env');
    fs.mkdirSync(envDir);
    const cfg = f.config(`
states:
  probe:
    run: >-
      printf '%s|%s|%s|%s|%s|%s|%s\\n' {cloud} {oam_floating_ip} {management_start_ip} {region_name} {label.ssh_port} {label.jump} {group}
      >> ${out}; env | grep '^DCM_SUB_\\|^DCM_LABEL_' | sort > ${envDir}/$DCM_CLOUD
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'custom', '--driver', 'exec', '--exec-config', cfg, '--label', 'rollout=yes']);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(0);
    // Only the labelled sites ran; an unset field or a missing label is an empty value.
    expect(fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).sort()).toEqual([
      'site1|10.1.0.1|192.168.1.2|RegionSite1|2201||edge',
      'site2|||||bastion one|Default',
    ]);
    expect(fs.readdirSync(envDir).sort()).toEqual(['site1', 'site2']);
    const e1 = envOf(path.join(envDir, 'site1'));
    expect(e1).toMatchObject({
      DCM_SUB_NAME: 'site1',
      DCM_SUB_GROUP: 'edge',
      DCM_SUB_OAM_FLOATING_IP: '10.1.0.1',
      DCM_SUB_MANAGEMENT_START_IP: '192.168.1.2',
      DCM_SUB_REGION_NAME: 'RegionSite1',
      DCM_SUB_DEPLOY_STATUS: 'complete',
      DCM_SUB_KUBE_ROOTCA_SYNC_STATUS: 'out-of-sync',
      DCM_LABEL_SSH_PORT: '2201',
      DCM_LABEL_ROLLOUT: 'yes',
    });
    expect(e1.DCM_SUB_ID).toMatch(/^\d+$/);
    // A field never given is not set at all, so that a script can tell it from an empty one.
    const e2 = envOf(path.join(envDir, 'site2'));
    expect(e2.DCM_SUB_OAM_FLOATING_IP).toBeUndefined();
    expect(e2.DCM_SUB_LOCATION).toBeUndefined();
    expect(e2.DCM_LABEL_JUMP).toBe('bastion one');
    expect(e2.DCM_LABEL_SSH_PORT).toBeUndefined();
  });

  test('the field placeholders are the fields subcloud show -d prints, by the same names', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', '--oam-floating-ip', '10.0.0.1', '--deploy-config-sync-status', 'deployed', '--label', 'k=v']);
    const shown = Object.keys(JSON.parse(dcmQuickOk([...db(), 'subcloud', 'show', 's1', '-d', '-f', 'json']).stdout) as object);
    // show prints group_id (its group's name is {group}), the endpoint as dcmanager spells it, the
    // record's own times, and the labels.
    const expected = shown.filter((k) => !['labels', 'created_at', 'updated_at'].includes(k)).map((k) => k.replace('kube-rootca', 'kube_rootca'));
    expect([...SUBCLOUD_FIELDS].filter((k) => k !== 'group').sort()).toEqual(expected.sort());
  });

  test('an unknown field is still refused at create; {label.KEY} of any key is not', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const bad = f.config('states:\n  probe: echo {oam_floating_iq}\n', 'bad.yaml');
    const r = dcmQuick([...db(), 'strategy', 'create', '--type', 'custom', '--driver', 'exec', '--exec-config', bad]);
    expect(r.stderr).toMatch(/^error: .*unknown placeholder \{oam_floating_iq\}/);
    expect(r.code).toBe(2);
    const ok = f.config('states:\n  probe: echo {label.anything}\n', 'ok.yaml');
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'custom', '--driver', 'exec', '--exec-config', ok]);
  });
});
