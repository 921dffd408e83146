/** Edge cases of the contract found in review, in process through `main`. */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { run, runOk } from '../helpers/inprocess.js';
import { tempDir } from '../helpers/cli.js';

let t: ReturnType<typeof tempDir>;
let n = 0;
beforeAll(() => {
  t = tempDir();
});
afterAll(() => t.cleanup());
const freshDb = () => path.join(t.dir, `e${n++}.db`);

describe('edges', () => {
  test('a group name may not be a number, nor blank or padded (no file)', async () => {
    const db = freshDb();
    // The server's refusal (utils.validate_name in SubcloudGroupsController.post): a 400, exit 1.
    for (const name of ['7', '']) {
      const r = await run(['--db', db, 'subcloud-group', 'add', '--name', name]);
      expect([r.code, r.stderr]).toEqual([1, 'error: Invalid group name\n']);
    }
    // dcm's own rule of a name (the server takes these): a usage error.
    for (const name of [' x', 'x ']) {
      const r = await run(['--db', db, 'subcloud-group', 'add', '--name', name]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^error: invalid subcloud group name/);
    }
    expect(fs.existsSync(db)).toBe(false);
  });

  test('subcloud-group show Default on a file that does not exist shows Default, like list', async () => {
    const db = freshDb();
    const shown = JSON.parse((await runOk(['--db', db, 'subcloud-group', 'show', 'Default', '-f', 'json'])).stdout);
    expect(shown).toMatchObject({ id: 1, name: 'Default', 'update apply type': 'parallel', 'max parallel subclouds': 2 });
    expect(fs.existsSync(db)).toBe(false);
  });

  test('--force takes in-sync subclouds but an unknown sync status is still an error', async () => {
    const db = freshDb();
    await runOk(['--db', db, 'subcloud', 'add', 'a', 'b', '--sync', 'kubernetes=in-sync']);
    await runOk(['--db', db, 'subcloud', 'update', 'b', '--sync', 'kubernetes=unknown']);
    const r = await run(['--db', db, 'strategy', 'create', '--type', 'kubernetes', '--force']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: Kubernetes sync status is unknown for one or more subclouds\n');
  });

  test('yaml is YAML 1.1, as PyYAML reads it: yes, on and timestamps stay strings', async () => {
    const db = freshDb();
    const out = (await runOk(['--db', db, 'subcloud', 'add', 'yes', 'on', '-f', 'yaml', '-c', 'name'])).stdout;
    // PyYAML's safe_dump: a string that would read back as a bool is single-quoted.
    expect(out).toBe("- name: 'yes'\n- name: 'on'\n");
    const group = (await runOk(['--db', db, 'subcloud-group', 'show', 'Default', '-f', 'yaml'])).stdout;
    expect(group).toMatch(/^created_at: '\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}'$/m);
    expect(YAML.parse(group, { version: '1.1' })).toMatchObject({ name: 'Default', 'max parallel subclouds': 2 });
  });

  test('a command group without its subcommand is a usage error (exit 2)', async () => {
    expect((await run(['strategy'])).code).toBe(2);
    expect((await run(['subcloud'])).code).toBe(2);
  });

  test('a whole number too large for max parallel gets the range message', async () => {
    const db = freshDb();
    await runOk(['--db', db, 'subcloud', 'add', 'a']);
    const r = await run(['--db', db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '99999999999999999999']);
    // The client passes any int on; the server refuses it with a 400 (exit 1), in its words.
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: Invalid max-parallel-subclouds value: \d+\. For patch strategy, the value must be between 1 and 5000\.\n$/);
  });

  test('a JSON array with a trailing comma is refused, naming the line', async () => {
    const db = freshDb();
    const file = path.join(t.dir, 'trailing.json');
    fs.writeFileSync(file, '[{"name":"a"},\n{"name":"b"},\n]\n');
    const r = await run(['--db', db, 'subcloud', 'import', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: line 3: empty element in JSON array/);
    expect(fs.existsSync(db)).toBe(false);
  });

  test('a read command on an empty file prints the empty result and writes nothing', async () => {
    const db = freshDb();
    fs.writeFileSync(db, '');
    expect((await runOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name'])).stdout).toBe('<none>\n');
    expect(fs.statSync(db).size).toBe(0);
  });
});
