/**
 * Errors through the built binary (a sample of each kind; test/cli/main.test.ts runs every case in
 * process): one `error: ` line on stderr, no stack trace, the process exit code 1 or 2, and the
 * files byte for byte unchanged — or not created at all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { exampleFixtures, expectRefused, withSql, type Fixture } from '../helpers/fleet.js';

const fx = exampleFixtures();

type Case = [title: string, args: string[], code: 1 | 2, message: string | RegExp];

function refuse(fx: () => Fixture, cases: Case[]): void {
  test.each(cases)('%s', (_title, args, code, message) => {
    const { dir, db } = fx().fresh();
    expectRefused(dir, ['--db', db, ...args], code, message);
  });
}

describe('strategy create', () => {
  refuse(() => fx.fleet, [
    [
      'max parallel -1',
      ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '-1'],
      1,
      'Invalid max-parallel-subclouds value: -1. For patch strategy, the value must be between 1 and 5000.',
    ],
    [
      'max parallel 251 for prestage (alias)',
      ['prestage-strategy', 'create', '--max-parallel-subclouds', '251'],
      1,
      'Invalid max-parallel-subclouds value: 251. For prestage, the value must be between 1 and 250.',
    ],
    ['max parallel abc', ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', 'abc'], 2, /'abc'/],
    ['apply type diagonal', ['strategy', 'create', '--type', 'patch', '--subcloud-apply-type', 'diagonal'], 2, /'diagonal'/],
    ['unknown --type', ['strategy', 'create', '--type', 'nope'], 2, /'nope'/],
    ['unknown subcloud', ['strategy', 'create', '--type', 'patch', 'nosuch'], 1, 'Subcloud nosuch does not exist'],
    ['cloud name with --group', ['strategy', 'create', '--type', 'patch', 's1', '--group', 'rest'], 1, 'The cloud_name and group options are mutually exclusive.'],
    ['in-sync cloud', ['patch-strategy', 'create', 's3'], 1, 'Subcloud s3 does not require patching'],
    ['sw-deploy rules', ['sw-deploy-strategy', 'create', '--rollback', '--release-id', 'r1'], 1, /--rollback.*--release-id/],
  ]);
  refuse(() => fx.withStrategy, [
    ['a second strategy create', ['strategy', 'create', '--type', 'kubernetes'], 1, "Strategy of type: 'patch' already exists"],
    ['delete a subcloud that has a step', ['subcloud', 'delete', 's6'], 1, /^Subcloud s6 has a step/],
    ['an unknown -c column on a write command', ['strategy', 'delete', '-c', 'nope'], 1, /nope/],
  ]);
});

describe('inventory', () => {
  refuse(() => fx.fleet, [
    ['--sync patching=maybe', ['subcloud', 'add', 'z1', '--sync', 'patching=maybe'], 2, /maybe/],
    ['--sync nope=in-sync', ['subcloud', 'update', 's1', '--sync', 'nope=in-sync'], 2, /nope/],
    ['delete group Default', ['subcloud-group', 'delete', 'Default'], 1, /Default/],
  ]);

  test('import: broken JSON on line 3, from a file (JSON array) and from stdin (JSON lines)', () => {
    const { dir, db } = fx.fleet.fresh();
    const file = path.join(dir, 'fx.fleet.json');
    fs.writeFileSync(file, '[\n  {"name": "z1"},\n  {"name": "z2",, "group": "rest"},\n  {"name": "z3"}\n]\n');
    expectRefused(dir, ['--db', db, 'subcloud', 'import', file], 1, /^line 3: /);
    expectRefused(dir, ['--db', db, 'subcloud', 'import', '-'], 1, /^line 3: /, { input: '{"name":"z1"}\n{"name":"z2"}\n{"name":\n' });
    expectRefused(dir, ['--db', db, 'subcloud', 'import'], 1, /^line 3: .*s1 already exists/, { input: 'name\nz1\ns1\n' });
  });
});

describe('the database file', () => {
  test('--db in a missing directory, on a directory, on a text file', () => {
    const { dir } = fx.fleet.fresh(true);
    fs.mkdirSync(path.join(dir, 'sub'));
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a database\n');
    expectRefused(dir, ['--db', path.join(dir, 'nodir', 'dcm.db'), 'subcloud', 'add', 's1'], 1, /nodir/);
    expectRefused(dir, ['--db', path.join(dir, 'sub'), 'subcloud', 'add', 's1'], 1, /directory/);
    expectRefused(dir, ['--db', path.join(dir, 'notes.txt'), 'subcloud', 'list'], 1, /not a dcm database/);
    expect(fs.readdirSync(dir).sort()).toEqual(['notes.txt', 'sub']);
    expect(fs.readdirSync(path.join(dir, 'sub'))).toEqual([]);
  });

  test('--db on a database from a newer dcm', async () => {
    const { dir, db } = fx.fleet.fresh();
    await withSql(db, (d) => d.pragma('user_version = 99'));
    expectRefused(dir, ['--db', db, 'subcloud', 'add', 'z1'], 1, /newer/);
    expectRefused(dir, ['--db', db, 'strategy-step', 'list'], 1, /newer/);
  });

  test('a refused write on a missing file creates nothing', () => {
    const { dir } = fx.fleet.fresh(true);
    const db = path.join(dir, 'dcm.db');
    expectRefused(dir, ['--db', db, 'strategy', 'create', '--type', 'patch'], 1, 'Strategy has no steps to apply');
    expectRefused(dir, ['--db', db, 'subcloud', 'add', 's1', '--group', 'nosuch'], 1, 'Subcloud group nosuch does not exist');
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

test('usage: an unknown command, an unknown option', () => {
  const { dir, db } = fx.fleet.fresh();
  expectRefused(dir, ['--db', db, 'frobnicate'], 2, /frobnicate/);
  expectRefused(dir, ['--db', db, 'subcloud', 'list', '--colour'], 2, /--colour/);
});
