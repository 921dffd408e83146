/**
 * dcmanager's scripts, round two (issue 20), through the built binary: abbreviations, `--yes` on
 * every delete, subclouds named by id, the commands scripts call. Expected records follow
 * starlingx/distcloud-client's command classes (dcmanagerclient/commands/v1/, read at commit
 * b4a8ec19 of subcloud_manager.py and bca2f412 of sw_deploy_manager.py).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/cli.js';
import { dcm, expectErrorLine, fileHash } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let tmp: ReturnType<typeof tempDir>;
let template: string;
beforeAll(() => {
  tmp = tempDir();
  template = path.join(tmp.dir, 'template.db');
  dcmQuickOk(['--db', template, 'subcloud-group', 'add', '--name', 'canary']);
  dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud1', 'subcloud2', '--group', 'canary']);
  dcmQuickOk(['--db', template, 'subcloud', 'add', 'subcloud3', 'subcloud4']);
});
afterAll(() => tmp.cleanup());

let n = 0;
function fleet(): string {
  const db = path.join(tmp.dir, `fleet${++n}.db`);
  fs.copyFileSync(template, db);
  return db;
}

describe('abbreviations through the binary', () => {
  test('every abbreviation a script was seen to use is accepted', () => {
    const db = fleet();
    const value = (args: string[]) => dcmQuickOk(['--db', db, ...args]).stdout;
    expect(value(['subcloud', 'show', 'subcloud1', '--det', '--form', 'value', '--col', 'name'])).toBe('subcloud1\n');
    expect(value(['subcloud', 'list', '--form', 'json', '--noind', '--col', 'name', '--sort-c', 'name', '--sort-d'])).toBe(
      '[{"name": "subcloud4"}, {"name": "subcloud3"}, {"name": "subcloud2"}, {"name": "subcloud1"}]\n',
    );
    expect(value(['subcloud-group', 'list', '--max-w', '30', '--form', 'csv', '--quo', 'all'])).toContain('"id","name","description"');
    const created = JSON.parse(value(['patch-strategy', 'create', '--max-parallel', '3', '--stop', '--subcloud-apply', 'parallel', '--form', 'json']));
    expect(created['max parallel subclouds']).toBe(3);
    expect(created['stop on failure']).toBe(true);
    expect(created['subcloud apply type']).toBe('parallel');
    value(['patch-strategy', 'delete', '--y']);
    const sw = JSON.parse(value(['sw-deploy-strategy', 'create', '--release', 'stx-11', '--with-p', '--sysadmin', 'pw', '--form', 'json']));
    expect(sw.release_id).toBe('stx-11');
    expect(sw.with_prestage).toBe('with_prestage');
  });

  test('an ambiguous prefix is refused with the candidates (exit 2, file unchanged)', () => {
    const db = fleet();
    const before = fileHash(db);
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'list', '--sort', 'name']), 2, 'ambiguous option: --sort could match --sort-column, --sort-ascending, --sort-descending');
    expectErrorLine(
      dcmQuick(['--db', db, 'patch-strategy', 'create', '--max', '3']),
      2,
      'ambiguous option: --max could match --max-parallel-subclouds, --max-failures, --max-width',
    );
    expect(fileHash(db)).toBe(before);
  });
});

describe('--yes on every delete', () => {
  const confirmations = { CLI_CONFIRMATIONS: 'enabled' };
  test('subcloud delete and subcloud-group delete take --yes, and confirm without it', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'empty']);
    const before = fileHash(db);
    const msg = 'CLI_CONFIRMATIONS is enabled and there is no terminal to confirm on: give --yes to proceed';
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'delete', 'subcloud4'], { env: confirmations }), 1, msg);
    expectErrorLine(dcmQuick(['--db', db, 'subcloud-group', 'delete', 'empty'], { env: confirmations }), 1, msg);
    expect(fileHash(db)).toBe(before);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'delete', 'subcloud4', '--yes'], { env: confirmations }).stdout).toBe('');
    expect(dcmQuickOk(['--db', db, 'subcloud-group', 'delete', 'empty', '--yes'], { env: confirmations }).stdout).toBe('');
    dcmQuickOk(['--db', db, 'subcloud', 'delete', 'subcloud3', '--yes']);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name']).stdout).toBe('subcloud1\nsubcloud2\n');
  });
});

describe('a subcloud named by its id', () => {
  test('show, update, delete and strategy-step show take the id (dcmanager: all digits is an id)', () => {
    const db = fleet();
    const ids = dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'id']).stdout.trim().split('\n');
    expect(ids).toEqual(['1', '2', '3', '4']);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'show', '2', '-f', 'value', '-c', 'name']).stdout).toBe('subcloud2\n');
    expect(dcmQuickOk(['--db', db, 'subcloud', 'update', '3', '--location', 'Ottawa', '-f', 'value', '-c', 'name', '-c', 'location']).stdout).toBe(
      'subcloud3\nOttawa\n',
    );
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', 'subcloud1']);
    expect(dcmQuickOk(['--db', db, 'strategy-step', 'show', '1', '-f', 'value', '-c', 'cloud']).stdout).toBe('subcloud1\n');
    dcmQuickOk(['--db', db, 'subcloud', 'delete', '4', '--yes']);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name']).stdout).toBe('subcloud1\nsubcloud2\nsubcloud3\n');
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'show', '99']), 1, 'Subcloud 99 does not exist');
  });

  test('a subcloud whose name is all digits is still found by name when no subcloud has that id', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud', 'add', '2024']);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'show', '2024', '-f', 'value', '-c', 'id']).stdout).toBe('5\n');
  });
});

describe('deprecated sw-deploy options', () => {
  test("--with-delete and --delete-only are --delete and --cleanup, with the client's notice on stdout before the record", () => {
    const db = fleet();
    const notice = (flag: string, instead: string) =>
      // The client's messages (CreateSwDeployStrategy.WITH_DELETE_DEPRECATION_MSG, DELETE_ONLY_DEPRECATION_MSG).
      `### DEPRECATION NOTICE ###\n${flag}: This option is deprecated and will be removed in a future release. Please use ${instead} instead.\n##########################\n\n`;
    const withDelete = dcmQuickOk(['--db', db, 'sw-deploy-strategy', 'create', '--release-id', 'stx-11', '--with-delete', '-f', 'json']);
    expect(withDelete.stdout.startsWith(notice('--with-delete', '--delete'))).toBe(true);
    expect(JSON.parse(withDelete.stdout.slice(notice('--with-delete', '--delete').length)).delete_option).toBe('delete');
    expect(withDelete.stderr).toBe('');
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    const deleteOnly = dcmQuickOk(['--db', db, 'sw-deploy-strategy', 'create', '--delete-only', '-f', 'json']);
    expect(deleteOnly.stdout.startsWith(notice('--delete-only', '--cleanup'))).toBe(true);
    expect(JSON.parse(deleteOnly.stdout.slice(notice('--delete-only', '--cleanup').length))).toMatchObject({ delete_option: 'cleanup', release_id: null });
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    // The rules of the options they stand for, and nothing for another type.
    expectErrorLine(
      dcmQuick(['--db', db, 'sw-deploy-strategy', 'create', '--delete-only', '--release-id', 'r']),
      1,
      'Option --cleanup cannot be used with any of the following options: --release-id, --with-prestage or --kube-upgrade.',
    );
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'create', '--type', 'patch', '--with-delete']), 2, '--with-delete is not an option of strategy type patch');
  });
});

describe('subcloud manage and unmanage', () => {
  test("set the management state and print the server's reply (the show fields up to prestage_versions)", () => {
    const db = fleet();
    const r = JSON.parse(dcmQuickOk(['--db', db, 'subcloud', 'unmanage', '3', '-f', 'json']).stdout);
    expect(r.management).toBe('unmanaged');
    expect(r).not.toHaveProperty('region_name');
    expect(Object.keys(r).slice(-3)).toEqual(['backup_datetime', 'prestage_status', 'prestage_versions']);
    expect(Object.keys(r).filter((k) => k.endsWith('_sync_status'))).toEqual([]);
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'unmanage', 'subcloud3']), 1, 'Unable to unmanage subcloud subcloud3: Subcloud is already unmanaged');
    expect(dcmQuickOk(['--db', db, 'subcloud', 'manage', 'subcloud3', '--yes', '-f', 'value', '-c', 'management']).stdout).toBe('managed\n');
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud4', '--availability', 'offline', '--management', 'unmanaged']);
    const before = fileHash(db);
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'manage', 'subcloud4']), 1, 'Unable to manage subcloud subcloud4: Subcloud is offline; give --force to manage it anyway');
    expect(fileHash(db)).toBe(before);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'manage', 'subcloud4', '--force', '-f', 'value', '-c', 'management']).stdout).toBe('managed\n');
  });

  test('refused while the applying strategy drives the subcloud, allowed for one not started or ended', async () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--subcloud-apply-type', 'serial', '--sim-latency', '30s', 'subcloud1', 'subcloud2']);
    const { dcmSpawn, waitFor } = await import('../helpers/cli.js');
    // Ctrl-C with a short drain ends the apply without waiting out the 30 s states.
    const apply = dcmSpawn(['--db', db, 'strategy', 'apply', '-q'], { DCM_DRAIN_MS: '200' });
    try {
      await waitFor(() => dcmQuickOk(['--db', db, 'strategy-step', 'show', 'subcloud1', '-f', 'value', '-c', 'state']).stdout !== 'initial\n');
      const before = dcmQuickOk(['--db', db, 'subcloud', 'show', 'subcloud1', '-f', 'json']).stdout;
      const r = dcmQuick(['--db', db, 'subcloud', 'unmanage', 'subcloud1']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: Unable to unmanage subcloud subcloud1: its step is in progress in the applying patch strategy \(state pre check\); wait until it ends, or abort the strategy\n$/);
      expect(dcmQuickOk(['--db', db, 'subcloud', 'show', 'subcloud1', '-f', 'json']).stdout).toBe(before);
      // subcloud2 waits its turn in `initial`: it may change hands.
      expect(dcmQuickOk(['--db', db, 'subcloud', 'unmanage', 'subcloud2', '-f', 'value', '-c', 'management']).stdout).toBe('unmanaged\n');
    } finally {
      apply.child.kill('SIGINT');
      await apply.done;
    }
  }, 60_000);
});

describe('subcloud errors', () => {
  test("the subcloud's last failure, from the step history; 'No errors present' without one", () => {
    const db = fleet();
    expect(dcmQuickOk(['--db', db, 'subcloud', 'errors', 'subcloud3']).stdout).toBe('No errors present\n');
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--sim-fail', 'subcloud3=updating patches']);
    expect(dcm(['--db', db, 'strategy', 'apply', '-q']).code).toBe(1);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'errors', '3']).stdout).toBe('updating patches: injected failure\n');
    expect(dcmQuickOk(['--db', db, 'subcloud', 'errors', 'subcloud1', '-f', 'json']).stdout).toBe('No errors present\n');
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'errors', 'nosuch']), 1, 'Subcloud nosuch does not exist');
  });
});

describe('subcloud prestage', () => {
  test('a one-subcloud prestage strategy, applied at once and deleted once complete', () => {
    const db = fleet();
    const r = dcmQuickOk(['--db', db, 'subcloud', 'prestage', '2', '--release', '24.09', '--sysadmin-password', 'S3cret', '--sim-latency', '0', '-f', 'json']);
    const rec = JSON.parse(r.stdout);
    // The server's reply (SubcloudsController.patch, verb prestage): prestaging, set for the reply only.
    expect(rec).toMatchObject({ name: 'subcloud2', prestage_status: 'prestaging', prestage_software_version: '24.09' });
    expect(dcmQuickOk(['--db', db, 'subcloud', 'show', 'subcloud2', '-f', 'value', '-c', 'prestage_status']).stdout).toBe('complete\n');
    expect(rec).not.toHaveProperty('region_name');
    expect(r.stdout + r.stderr).not.toContain('S3cret');
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'show']), 1, 'Strategy not found');
    // Without --release the server names the system controller's release; dcm takes the newest the
    // inventory holds, and with none (this fleet has no software versions) prints no such row, as
    // the client's detail_prestage_format prints none for an empty value.
    const plain = JSON.parse(dcmQuickOk(['--db', db, 'subcloud', 'prestage', 'subcloud1', '--sim-latency', '0', '-f', 'json', '-q']).stdout);
    expect(Object.keys(plain).at(-1)).toBe('prestage_versions');
  });

  test('a failed prestage exits 1 and keeps its strategy; another strategy blocks it', () => {
    const db = fleet();
    const r = dcmQuick(['--db', db, 'subcloud', 'prestage', 'subcloud1', '--sim-latency', '0', '--sim-fail', 'subcloud1=prestage-prepare', '-q', '-f', 'value', '-c', 'prestage_status']);
    expect(r.code).toBe(1);
    expect(dcmQuickOk(['--db', db, 'strategy-step', 'show', 'subcloud1', '-f', 'value', '-c', 'state']).stdout).toBe('failed\n');
    expect(dcmQuickOk(['--db', db, 'subcloud', 'errors', 'subcloud1']).stdout).toBe('prestage-prepare: injected failure\n');
    const before = fileHash(db);
    expect(dcmQuick(['--db', db, 'subcloud', 'prestage', 'subcloud2', '--sim-latency', '0']).code).toBe(1);
    expect(fileHash(db)).toBe(before);
  });
});

describe('alarm summary and bash-completion', () => {
  test("alarm summary: 0 and OK for a managed online subcloud, - and disabled for one the alarm audit never reached; <none> when empty", () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud3', '--availability', 'offline']);
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud4', '--management', 'unmanaged']);
    expect(dcmQuickOk(['--db', db, 'alarm', 'summary', '-f', 'csv']).stdout).toBe(
      '"NAME","CRITICAL_ALARMS","MAJOR_ALARMS","MINOR_ALARMS","WARNINGS","STATUS"\n' +
        // Newest first, as the server lists them (subcloud_alarms_get_all: order_by(desc(id))).
        '"subcloud4","-","-","-","-","disabled"\n"subcloud3","-","-","-","-","disabled"\n"subcloud2",0,0,0,0,"OK"\n"subcloud1",0,0,0,0,"OK"\n',
    );
    expect(dcmQuickOk(['--db', path.join(tmp.dir, 'none.db'), 'alarm', 'summary', '-f', 'value']).stdout).toBe('<none> <none> <none> <none> <none> <none>\n');
  });

  test('bash-completion prints every command and the global options on one line', () => {
    const out = dcmQuickOk(['bash-completion']).stdout;
    expect(out.endsWith('\n') && !out.slice(0, -1).includes('\n')).toBe(true);
    for (const w of ['subcloud list', 'subcloud manage', 'subcloud prestage', 'alarm summary', 'patch-strategy create', 'strategy-config update', '--format', '--help']) {
      expect(out).toContain(w);
    }
  });
});

describe("an operator's script written for dcmanager", () => {
  test('runs unchanged: ids from -f value -c id, eval of -f shell, abbreviations, --yes everywhere', async () => {
    const { BIN, ROOT } = await import('../helpers/cli.js');
    const { spawnSync } = await import('node:child_process');
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'retired']);
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud2', '--availability', 'offline']);
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud3', '--sync', 'patching=in-sync']);
    const bin = path.join(tmp.dir, 'opbin');
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(path.join(bin, 'dcmanager'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
    const r = spawnSync('bash', [path.join(ROOT, 'test', 'e2e', 'dcmanager-operator.sh')], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, DCM_DB: db, CLI_CONFIRMATIONS: 'enabled' },
      encoding: 'utf8',
    });
    expect(r.stderr).not.toMatch(/error:/);
    expect(r.stdout).toBe(
      [
        'unmanaged subcloud2 (offline, unmanaged)',
        '2',
        'True',
        'patch strategy: complete',
        'subclouds left: [{"name": "subcloud1"}, {"name": "subcloud2"}, {"name": "subcloud3"}]',
        'groups left: Default canary ',
        '',
      ].join('\n'),
    );
    expect(r.status).toBe(0);
  }, 60_000);
});

describe('the records as the current client and server print them', () => {
  test('sw-deploy without --kube-upgrade: kube_upgrade is an empty string ([ -n "$kube_upgrade" ] after eval)', () => {
    const db = fleet();
    const shell = dcmQuickOk(['--db', db, 'sw-deploy-strategy', 'create', '--release-id', 'stx-11', '-f', 'shell']).stdout;
    expect(shell).toContain('kube_upgrade=""\n');
    expect(JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'show', '-f', 'json']).stdout).kube_upgrade).toBe('');
  });

  test("strategy delete prints the record in state deleting, its updated_at stamped (dcmanager's API answer)", () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch']);
    const r = JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'delete', '--yes', '-f', 'json']).stdout);
    expect(r.state).toBe('deleting');
    expect(r.updated_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$/);
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'show']), 1, 'Strategy not found');
  });

  test('subcloud show -d leaves out oam_floating_ip and deploy_config_sync_status when unknown', () => {
    const db = fleet();
    const value = () => dcmQuickOk(['--db', db, 'subcloud', 'show', 'subcloud1', '-d', '-f', 'value']).stdout.split('\n');
    const plain = dcmQuickOk(['--db', db, 'subcloud', 'show', 'subcloud1', '-f', 'value']).stdout.split('\n');
    expect(value()).toEqual(plain);
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud1', '--oam-floating-ip', '10.10.10.2', '--deploy-config-sync-status', 'deployed']);
    expect(value().slice(-4)).toEqual(['10.10.10.2', 'deployed', 'None', '']);
  });
});

describe("dcmanager's wording and leniency", () => {
  test("--max-parallel-subclouds 0 is dropped, as the client sends only a truthy value: the server's 2", () => {
    const db = fleet();
    expect(JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '0', '-f', 'json']).stdout)['max parallel subclouds']).toBe(2);
  });

  test('--for-install with --for-sw-deploy, in the client\'s words', () => {
    const db = fleet();
    expectErrorLine(dcmQuick(['--db', db, 'prestage-strategy', 'create', '--for-install', '--for-sw-deploy']), 1, 'Options --for-install and --for-sw-deploy cannot be combined');
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'prestage', 'subcloud1', '--for-i', '--for-s']), 1, 'Options --for-install and --for-sw-deploy cannot be combined');
  });

  test("help COMMAND... is that command's --help, exit 0", () => {
    const r = dcmQuickOk(['help', 'subcloud', 'list']);
    expect(r.stdout).toMatch(/^Usage: dcm subcloud list \[options\]/);
    expect(dcmQuickOk(['help']).stdout).toMatch(/^Usage: dcm \[options\] \[command\]/);
    expect(dcmQuick(['help', 'nosuch']).code).toBe(2);
  });
});

describe('old patch-strategy scripts', () => {
  test('patch-strategy-config is strategy-config under its old name', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'patch-strategy-config', 'update', 'subcloud1', '--storage', 'serial', '--worker', 'serial', '--max-parallel-w', '3', '--alarm', 'strict', '--default', 'migrate']);
    expect(dcmQuickOk(['--db', db, 'strategy-config', 'show', 'subcloud1', '-f', 'value', '-c', 'max parallel workers']).stdout).toBe('3\n');
    expect(dcmQuickOk(['--db', db, 'patch-strategy-config', 'list', '-f', 'value', '-c', 'cloud']).stdout).toBe('all clouds default\nsubcloud1\n');
    dcmQuickOk(['--db', db, 'patch-strategy-config', 'delete', '1', '--yes']);
    expect(dcmQuickOk(['--db', db, 'strategy-config', 'list', '-f', 'value', '-c', 'cloud']).stdout).toBe('all clouds default\n');
  });
});

describe('what the server fills in', () => {
  test("--group records the group's apply type and window; serial records 1 (orchestrator_manager at distcloud ef76afd2)", () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud-group', 'update', 'canary', '--update_apply_type', 'serial', '--max_parallel_subclouds', '7']);
    const rec = (args: string[]) => JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', ...args, '-f', 'json']).stdout);
    expect(rec(['--group', 'canary'])).toMatchObject({ 'subcloud apply type': 'serial', 'max parallel subclouds': 1 });
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    dcmQuickOk(['--db', db, 'subcloud-group', 'update', 'canary', '--update_apply_type', 'parallel']);
    expect(rec(['--group', 'canary'])).toMatchObject({ 'subcloud apply type': 'parallel', 'max parallel subclouds': 7 });
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    expect(rec(['--subcloud-apply-type', 'serial', '--max-parallel-subclouds', '5'])).toMatchObject({ 'subcloud apply type': 'serial', 'max parallel subclouds': 1 });
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    // Neither: the server's 2 (each group's own window still applies to its stage).
    expect(rec([])).toMatchObject({ 'subcloud apply type': null, 'max parallel subclouds': 2 });
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    expect(rec(['subcloud1'])).toMatchObject({ 'subcloud apply type': null, 'max parallel subclouds': 2 });
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    expect(rec(['--subcloud-apply-type', 'parallel'])).toMatchObject({ 'subcloud apply type': 'parallel', 'max parallel subclouds': 2 });
  });
});

describe("the sync rule and the endpoints' order, as the server has them", () => {
  test('in-sync beside unknown is out-of-sync; all unknown is unknown; show lists the endpoints sorted', () => {
    const db = fleet();
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud1', '--sync', 'all=in-sync', '--sync', 'firmware=unknown']);
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud2', '--sync', 'all=unknown']);
    dcmQuickOk(['--db', db, 'subcloud', 'update', 'subcloud3', '--sync', 'all=in-sync']);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name', '-c', 'sync']).stdout).toBe(
      'subcloud1 out-of-sync\nsubcloud2 unknown\nsubcloud3 in-sync\nsubcloud4 out-of-sync\n',
    );
    const rows = dcmQuickOk(['--db', db, 'subcloud', 'show', 'subcloud1', '-f', 'shell']).stdout.split('\n').filter((l) => l.includes('_sync_status='));
    expect(rows).toEqual([
      'firmware_sync_status="unknown"',
      'kube_rootca_sync_status="in-sync"',
      'kubernetes_sync_status="in-sync"',
      'patching_sync_status="in-sync"',
      'usm_sync_status="in-sync"',
    ]);
  });
});

describe('--yes where nothing is taken away', () => {
  test('subcloud manage and prestage accept --yes and never ask; unmanage confirms', () => {
    const db = fleet();
    const env = { CLI_CONFIRMATIONS: 'enabled' };
    expectErrorLine(dcmQuick(['--db', db, 'subcloud', 'unmanage', 'subcloud1'], { env }), 1, 'CLI_CONFIRMATIONS is enabled and there is no terminal to confirm on: give --yes to proceed');
    dcmQuickOk(['--db', db, 'subcloud', 'unmanage', 'subcloud1', '--yes'], { env });
    dcmQuickOk(['--db', db, 'subcloud', 'manage', 'subcloud1'], { env });
    dcmQuickOk(['--db', db, 'subcloud', 'unmanage', 'subcloud1', '--yes'], { env });
    dcmQuickOk(['--db', db, 'subcloud', 'manage', 'subcloud1', '--yes'], { env });
    dcmQuickOk(['--db', db, 'subcloud', 'prestage', 'subcloud2', '--sim-latency', '0', '-q'], { env });
  });
});
