/**
 * `--db` that reads as an address and is none (issue 32): an error naming what was given (exit 1),
 * never a new file of that name and an empty fleet. A file so named is still reachable as ./NAME.
 */
import { expect, test } from '@jest/globals';
import fs from 'node:fs';
import { dcm, dcmOk } from '../helpers/cli.js';
import { tempPerTest } from '../helpers/history.js';

const temp = tempPerTest();

test.each([
  ['postgresql:foo.db', /^error: --db 'postgresql:foo\.db' looks like a PostgreSQL address but is not one: write postgresql:\/\/… \(postgresql:\/\/\/NAME for a local database\), or \.\/postgresql:foo\.db for a file of that name\n$/],
  ['postgres:/fleet', /^error: --db 'postgres:\/fleet' looks like a PostgreSQL address but is not one/],
  ['sqlite:///x.db', /^error: --db 'sqlite:\/\/\/x\.db' is a sqlite: address, which dcm does not take: name a file's path or a postgresql:\/\/ address\n$/],
  ['mysql://h/fleet', /^error: --db 'mysql:\/\/h\/fleet' is a mysql: address/],
])('--db %s: refused for a reader and a writer, nothing created', (db, message) => {
  const t = temp();
  for (const args of [['subcloud', 'list'], ['subcloud', 'add', 's1']]) {
    const r = dcm(['--db', db, ...args], { cwd: t.dir });
    expect([args[1], r.code, r.stdout]).toEqual([args[1], 1, '']);
    expect(r.stderr).toMatch(message);
  }
  expect(fs.readdirSync(t.dir)).toEqual([]);
});

test('DCM_DB is held to the same, and names itself', () => {
  const t = temp();
  const r = dcm(['subcloud', 'list'], { cwd: t.dir, env: { DCM_DB: 'postgresql:foo.db' } });
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^error: DCM_DB 'postgresql:foo\.db' looks like a PostgreSQL address/);
  expect(fs.readdirSync(t.dir)).toEqual([]);
});

test('a file whose name has a colon is still a file: ./postgresql:foo.db, and a:b.db', () => {
  const t = temp();
  dcmOk(['--db', './postgresql:foo.db', 'subcloud', 'add', 's1'], { cwd: t.dir });
  dcmOk(['--db', 'a:b.db', 'subcloud', 'add', 's1'], { cwd: t.dir });
  expect(fs.readdirSync(t.dir).sort()).toEqual(['a:b.db', 'postgresql:foo.db']);
});
