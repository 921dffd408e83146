/**
 * The two silent mistakes of an exec config, refused at create (exit 2, one line naming the state
 * and the placeholder, the file as it was): `--type patch` with `{patch_id}` and no `--patch-id`,
 * and `"{cloud}"` inside the quotes of a string command.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, dcmOk, expectRefused, tempDir } from '../helpers/fleet.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
  dcmOk(['--db', t.db, 'subcloud', 'add', 's1', 's2']);
});
afterEach(() => t.cleanup());

const config = (name: string, text: string) => {
  const file = path.join(t.dir, name);
  fs.writeFileSync(file, text);
  return file;
};

describe('exec config lint at create', () => {
  test('--type patch with {patch_id} and no --patch-id: exit 2, the state and the placeholder named, nothing written', () => {
    const cfg = config('patch.yaml', 'states:\n  updating patches: ssh {cloud} sudo sw-patch apply {patch_id}\n  "*": [./site.sh, "{state}", "{cloud}"]\n');
    const create = ['--db', t.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg];
    expectRefused(t.dir, create, 2, `exec config ${cfg}: state "updating patches": run: {patch_id} is used but the strategy has no --patch-id: give it, or read $DCM_ARG_PATCH_ID, set only when given`);
    // The dry run makes the same check.
    expectRefused(t.dir, [...create, '--dry-run'], 2, /state "updating patches": run: \{patch_id\} is used/);
    const ok = dcmOk([...create, '--patch-id', 'PATCH_0001', '-f', 'value', '-c', 'state']);
    expect(ok.stdout).toBe('initial\n');
  });

  test('a placeholder inside double quotes of a string command: exit 2, nothing written; unquoted it is taken', () => {
    const quoted = config('quoted.yaml', 'states:\n  "*":\n    run: ssh "{cloud}" firmware-update\n');
    const create = ['--db', t.db, 'strategy', 'create', '--type', 'firmware', '--driver', 'exec'];
    expectRefused(t.dir, [...create, '--exec-config', quoted], 2, `exec config ${quoted}: state "*": run: {cloud} inside "…" quotes: a string command single-quotes each value itself, so write {cloud}, not "{cloud}"`);
    const bare = config('bare.yaml', 'states:\n  "*":\n    run: ssh {cloud} firmware-update\n');
    expect(dcm([...create, '--exec-config', bare]).code).toBe(0);
  });
});
