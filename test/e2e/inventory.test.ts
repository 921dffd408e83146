/**
 * The store and the inventory through the built binary (SPEC §2, §4): where the file is, what a
 * read on a missing file prints (and that it creates nothing), the file's settings, many names at
 * once, import from standard input.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dirFingerprint, Fixture, withSql } from '../helpers/fleet.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';
import { BIN } from '../helpers/cli.js';

let fx: Fixture; // temporary directories only
beforeAll(() => {
  fx = new Fixture(() => undefined);
});
afterAll(() => fx.cleanup());

describe('where the file is: --db, else $DCM_DB, else ./dcm.db', () => {
  test('./dcm.db in the working directory', () => {
    const { dir } = fx.fresh(true);
    dcmQuickOk(['subcloud', 'add', 'a1'], { cwd: dir });
    expect(fs.readdirSync(dir)).toEqual(['dcm.db']);
  });

  test('$DCM_DB over ./dcm.db, --db over $DCM_DB', () => {
    const { dir } = fx.fresh(true);
    const env = path.join(dir, 'env.db');
    const opt = path.join(dir, 'opt.db');
    dcmQuickOk(['subcloud', 'add', 'e1'], { cwd: dir, env: { DCM_DB: env } });
    expect(fs.readdirSync(dir)).toEqual(['env.db']);
    dcmQuickOk(['--db', opt, 'subcloud', 'add', 'o1'], { cwd: dir, env: { DCM_DB: env } });
    expect(fs.readdirSync(dir).sort()).toEqual(['env.db', 'opt.db']);
    const names = dcmQuickOk(['subcloud', 'list', '-f', 'value', '-c', 'name'], { cwd: dir, env: { DCM_DB: env } }).stdout;
    expect(names).toBe('e1\n');
  });
});

describe('read commands on a missing file', () => {
  test('print the empty result, exit 0, and create nothing', () => {
    const { dir, db } = fx.fresh(true);
    const read = (...args: string[]) => {
      const r = dcmQuick(['--db', db, ...args]);
      expect([r.code, r.stderr]).toEqual([0, '']);
      return r.stdout;
    };
    expect(read('subcloud', 'list')).toBe(
      [
        '+--------+--------+------------+--------------+---------------+--------+---------------+-----------------+',
        '| id     | name   | management | availability | deploy status | sync   | backup status | prestage status |',
        '+--------+--------+------------+--------------+---------------+--------+---------------+-----------------+',
        '| <none> | <none> | <none>     | <none>       | <none>        | <none> | <none>        | <none>          |',
        '+--------+--------+------------+--------------+---------------+--------+---------------+-----------------+',
        '',
      ].join('\n'),
    );
    // dcmanager's client: one <none> row in every format.
    expect(read('strategy-step', 'list', '-f', 'value')).toBe('<none> <none> <none> <none> <none> <none>\n');
    expect(read('strategy-step', 'history', '-f', 'value', '-c', 'cloud')).toBe('<none>\n');
    expect(JSON.parse(read('subcloud-group', 'list', '-f', 'json'))).toEqual([{ id: 1, name: 'Default', description: 'Default Subcloud Group' }]);
    expect(read('subcloud-group', 'list-subclouds', 'Default', '-f', 'csv', '-c', 'name')).toBe('"name"\n"<none>"\n');
    // Nothing to show or delete: not found, and still no file.
    const show = dcmQuick(['--db', db, 'strategy', 'show']);
    expect(show.code).toBe(1);
    expect(show.stderr).toMatch(/^error: .*not found\n$/);
    expect(dcmQuick(['--db', db, 'strategy', 'delete']).code).toBe(1);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

describe('the file', () => {
  test('a write creates it: WAL, schema version, Default group; reads leave it byte for byte', async () => {
    const { dir, db } = fx.fresh(true);
    dcmQuickOk(['--db', db, 'subcloud', 'add', 'a1']);
    const info = await withSql(db, async (d) => ({
      journal: await d.pragma('journal_mode', { simple: true }),
      version: await d.pragma('user_version', { simple: true }),
      tables: (await d.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]).sort(),
    }));
    expect(info.journal).toBe('wal');
    expect(info.version).toBeGreaterThanOrEqual(1);
    expect(info.tables).toEqual(expect.arrayContaining(['subcloud', 'subcloud_group', 'strategy', 'strategy_step', 'strategy_stage']));
    const before = dirFingerprint(dir);
    dcmQuickOk(['--db', db, 'subcloud', 'list']);
    dcmQuickOk(['--db', db, 'subcloud-group', 'show', 'Default']);
    expect(dirFingerprint(dir)).toEqual(before);
  });
});

describe('inventory at scale and from standard input', () => {
  test('subcloud add with 1000 names in one command', () => {
    const { db } = fx.fresh(true);
    const names = Array.from({ length: 1000 }, (_, i) => `subcloud${i + 1}`);
    dcmQuickOk(['--db', db, 'subcloud', 'add', ...names, '--group', '1', '-f', 'value', '-c', 'id']);
    const listed = dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'id', '-c', 'name']).stdout.trimEnd().split('\n');
    expect(listed).toEqual(names.map((n, i) => `${i + 1} ${n}`));
  });

  test('import from standard input: `-` and no file argument; CSV, JSON array, JSON lines', () => {
    const { db } = fx.fresh(true);
    expect(dcmQuickOk(['--db', db, 'subcloud', 'import', '-', '-f', 'value'], { input: 'name,availability\nc1,offline\nc2,online\n' }).stdout).toBe('2\n');
    expect(dcmQuickOk(['--db', db, 'subcloud', 'import', '-f', 'value'], { input: '[{"name":"a1"},{"name":"a2","management":"unmanaged"}]' }).stdout).toBe('2\n');
    expect(dcmQuickOk(['--db', db, 'subcloud', 'import', '-', '-f', 'value'], { input: '{"name":"l1"}\n{"name":"l2","sync":"in-sync"}\n' }).stdout).toBe('2\n');
    expect(dcmQuickOk(['--db', db, 'subcloud', 'list', '-f', 'value', '-c', 'name', '-c', 'management', '-c', 'availability', '-c', 'sync']).stdout).toBe(
      [
        'c1 managed offline out-of-sync',
        'c2 managed online out-of-sync',
        'a1 managed online out-of-sync',
        'a2 unmanaged online out-of-sync',
        'l1 managed online out-of-sync',
        'l2 managed online in-sync',
        '',
      ].join('\n'),
    );
  });

  // A producer slower than dcm (a query piped in, an ssh to the CMDB): the first bytes come, then
  // nothing for a while. A synchronous read of a non-blocking pipe failed with EAGAIN there.
  test('import from a pipe that delivers late: every row, read to its end', async () => {
    const { db } = fx.fresh(true);
    const child = spawn(process.execPath, [BIN, '--db', db, 'subcloud', 'import', '-', '-f', 'value'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const done = new Promise<number | null>((r) => child.on('close', r));
    child.stdin.write('name\ns1\n');
    // The rest only once dcm has started reading: it has loaded and opened standard input.
    await new Promise((r) => setTimeout(r, 1_500));
    child.stdin.end('s2\ns3\n');
    expect([await done, err, out]).toEqual([0, '', '3\n']);
  });
});
