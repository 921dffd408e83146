import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import crypto from 'node:crypto';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { openDb, resolveDbPath } from '../../src/store/open.js';
import { APPLICATION_ID, SCHEMA_VERSION } from '../../src/store/migrations.js';
import { tempDir } from '../helpers/cli.js';

const hash = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

describe('openDb', () => {
  let t: ReturnType<typeof tempDir>;
  beforeEach(() => {
    t = tempDir();
  });
  afterEach(() => t.cleanup());

  test('creates the schema with the Default group, WAL, foreign keys and a busy timeout', async () => {
    const db = (await openDb(t.db, { create: true }))!;
    expect(await db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(await db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(await db.pragma('busy_timeout', { simple: true }) as number).toBeGreaterThanOrEqual(5000);
    expect(await db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(await db.pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
    expect(await db.prepare('SELECT id, name, update_apply_type, max_parallel_subclouds FROM subcloud_group').all()).toEqual([
      { id: 1, name: 'Default', update_apply_type: 'parallel', max_parallel_subclouds: 2 },
    ]);
    db.close();
    // Opening again migrates nothing and keeps the data.
    const again = (await openDb(t.db, { create: true }))!;
    expect(await again.prepare('SELECT count(*) AS n FROM subcloud_group').get()).toEqual({ n: 1 });
    again.close();
  });

  test('a missing file is not created by a reader', async () => {
    expect(await openDb(t.db, { create: false })).toBeNull();
    expect(fs.existsSync(t.db)).toBe(false);
  });

  test('a file from a newer dcm is refused and left byte for byte as it was', async () => {
    (await openDb(t.db, { create: true }))!.close();
    const raw = new Database(t.db);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    const before = hash(t.db);
    await expect(openDb(t.db, { create: true })).rejects.toThrow(/newer dcm/);
    expect(hash(t.db)).toBe(before);
  });

  test('an SQLite file that is not dcm’s is refused and left untouched', async () => {
    const raw = new Database(t.db);
    raw.exec('CREATE TABLE notes (body TEXT)');
    raw.close();
    const before = hash(t.db);
    await expect(openDb(t.db, { create: true })).rejects.toThrow(/not a dcm database/);
    expect(hash(t.db)).toBe(before);
  });

  test('a text file, a directory and a missing directory are refused', async () => {
    fs.writeFileSync(t.db, 'hello\n');
    await expect(openDb(t.db, { create: true })).rejects.toThrow(/not a dcm database/);
    expect(fs.readFileSync(t.db, 'utf8')).toBe('hello\n');
    await expect(openDb(t.dir, { create: true })).rejects.toThrow(/directory/);
    await expect(openDb(`${t.dir}/nope/x.db`, { create: true })).rejects.toThrow(/does not exist/);
  });

  test('--db, then DCM_DB, then ./dcm.db', () => {
    expect(resolveDbPath('a.db', { DCM_DB: 'b.db' })).toBe('a.db');
    expect(resolveDbPath(undefined, { DCM_DB: 'b.db' })).toBe('b.db');
    expect(resolveDbPath(undefined, {})).toBe('./dcm.db');
  });
});
