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
import { dcm, dcmOk, expectErrorLine, fileHash } from '../helpers/fleet.js';

let tmp: ReturnType<typeof tempDir>;
let template: string;
beforeAll(() => {
  tmp = tempDir();
  template = path.join(tmp.dir, 'template.db');
  dcmOk(['--db', template, 'subcloud-group', 'add', '--name', 'canary']);
  dcmOk(['--db', template, 'subcloud', 'add', 'subcloud1', 'subcloud2', '--group', 'canary']);
  dcmOk(['--db', template, 'subcloud', 'add', 'subcloud3', 'subcloud4']);
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
    const value = (args: string[]) => dcmOk(['--db', db, ...args]).stdout;
    expect(value(['subcloud', 'show', 'subcloud1', '--det', '--form', 'value', '--col', 'name'])).toBe('subcloud1\n');
    expect(value(['subcloud', 'list', '--form', 'json', '--noind', '--col', 'name', '--sort-c', 'name', '--sort-d'])).toBe(
      '[{"name": "subcloud4"}, {"name": "subcloud3"}, {"name": "subcloud2"}, {"name": "subcloud1"}]\n',
    );
    expect(value(['subcloud-group', 'list', '--max-w', '30', '--form', 'csv', '--quo', 'all'])).toContain('"id","name","description"');
    const created = JSON.parse(value(['patch-strategy', 'create', '--max-parallel', '3', '--stop', '--subcloud-apply', 'serial', '--form', 'json']));
    expect(created['max parallel subclouds']).toBe(3);
    expect(created['stop on failure']).toBe(true);
    expect(created['subcloud apply type']).toBe('serial');
    value(['patch-strategy', 'delete', '--y']);
    const sw = JSON.parse(value(['sw-deploy-strategy', 'create', '--release', 'stx-11', '--with-p', '--sysadmin', 'pw', '--form', 'json']));
    expect(sw.release_id).toBe('stx-11');
    expect(sw.with_prestage).toBe('with_prestage');
  });

  test('an ambiguous prefix is refused with the candidates (exit 2, file unchanged)', () => {
    const db = fleet();
    const before = fileHash(db);
    expectErrorLine(dcm(['--db', db, 'subcloud', 'list', '--sort', 'name']), 2, 'ambiguous option: --sort could match --sort-column, --sort-ascending, --sort-descending');
    expectErrorLine(
      dcm(['--db', db, 'patch-strategy', 'create', '--max', '3']),
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
    dcmOk(['--db', db, 'subcloud-group', 'add', '--name', 'empty']);
    const before = fileHash(db);
    const msg = 'CLI_CONFIRMATIONS is enabled and there is no terminal to confirm on: give --yes to proceed';
    expectErrorLine(dcm(['--db', db, 'subcloud', 'delete', 'subcloud4'], { env: confirmations }), 1, msg);
    expectErrorLine(dcm(['--db', db, 'subcloud-group', 'delete', 'empty'], { env: confirmations }), 1, msg);
    expect(fileHash(db)).toBe(before);
    expect(dcmOk(['--db', db, 'subcloud', 'delete', 'subcloud4', '--yes'], { env: confirmations }).stdout).toBe('');
    expect(dcmOk(['--db', db, 'subcloud-group', 'delete', 'empty', '--yes'], { env: confirmations }).stdout).toBe('');
    dcmOk(['--db', db, 'subcloud', 'delete', 'subcloud3', '--yes']);
    expect(dcmOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name']).stdout).toBe('subcloud1\nsubcloud2\n');
  });
});

describe('a subcloud named by its id', () => {
  test('show, update, delete and strategy-step show take the id (dcmanager: all digits is an id)', () => {
    const db = fleet();
    const ids = dcmOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'id']).stdout.trim().split('\n');
    expect(ids).toEqual(['1', '2', '3', '4']);
    expect(dcmOk(['--db', db, 'subcloud', 'show', '2', '-f', 'value', '-c', 'name']).stdout).toBe('subcloud2\n');
    expect(dcmOk(['--db', db, 'subcloud', 'update', '3', '--location', 'Ottawa', '-f', 'value', '-c', 'name', '-c', 'location']).stdout).toBe(
      'subcloud3\nOttawa\n',
    );
    dcmOk(['--db', db, 'strategy', 'create', '--type', 'patch', 'subcloud1']);
    expect(dcmOk(['--db', db, 'strategy-step', 'show', '1', '-f', 'value', '-c', 'cloud']).stdout).toBe('subcloud1\n');
    dcmOk(['--db', db, 'subcloud', 'delete', '4', '--yes']);
    expect(dcmOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name']).stdout).toBe('subcloud1\nsubcloud2\nsubcloud3\n');
    expectErrorLine(dcm(['--db', db, 'subcloud', 'show', '99']), 1, 'Subcloud 99 does not exist');
  });

  test('a subcloud whose name is all digits is still found by name when no subcloud has that id', () => {
    const db = fleet();
    dcmOk(['--db', db, 'subcloud', 'add', '2024']);
    expect(dcmOk(['--db', db, 'subcloud', 'show', '2024', '-f', 'value', '-c', 'id']).stdout).toBe('5\n');
  });
});

describe('deprecated sw-deploy options', () => {
  test('--with-delete and --delete-only are --delete and --cleanup, with a deprecation notice on stderr', () => {
    const db = fleet();
    const withDelete = dcmOk(['--db', db, 'sw-deploy-strategy', 'create', '--release-id', 'stx-11', '--with-delete', '-f', 'json']);
    expect(JSON.parse(withDelete.stdout).delete_option).toBe('delete');
    expect(withDelete.stderr).toBe('warning: Option --with-delete is deprecated and will be removed in a future release; use --delete instead.\n');
    dcmOk(['--db', db, 'strategy', 'delete']);
    const deleteOnly = dcmOk(['--db', db, 'sw-deploy-strategy', 'create', '--delete-only', '-f', 'json']);
    expect(JSON.parse(deleteOnly.stdout)).toMatchObject({ delete_option: 'cleanup', release_id: null });
    expect(deleteOnly.stderr).toContain('Option --delete-only is deprecated');
    dcmOk(['--db', db, 'strategy', 'delete']);
    // The rules of the options they stand for, and nothing for another type.
    expectErrorLine(
      dcm(['--db', db, 'sw-deploy-strategy', 'create', '--delete-only', '--release-id', 'r']),
      2,
      'Option --cleanup cannot be used with any of the following options: --release-id, --with-prestage or --kube-upgrade.',
    );
    expectErrorLine(dcm(['--db', db, 'strategy', 'create', '--type', 'patch', '--with-delete']), 2, '--with-delete is not an option of strategy type patch');
  });
});
