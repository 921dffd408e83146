/**
 * Migration 7 -> 8: the simulated sites leave the database for their own file beside it, once.
 * Files of schema 7 are built here by running the migrations of that time (0..6) on a raw file.
 */
import { REAL_CLOCK } from '../../src/platform/clock.js';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { sitesFileOf } from '../../src/platform/sites-file.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION } from '../../src/store/migrations.js';
import { openDb } from '../../src/store/open.js';
import { tempDir } from '../helpers/cli.js';

const ROWS = [
  { name: 'a', campaign: 'c1', done: 4, vim: 'applied', busy_state: null, busy_owner: null, options: '{"x":1}' },
  { name: 'b', campaign: 'c1', done: 1, vim: 'building', busy_state: 'create VIM strategy', busy_owner: 'h:1:2', options: null },
];

/** A file as dcm left it at schema 7, with `rows` in its sim_site table. */
function schema7(file: string, rows: typeof ROWS): void {
  const raw = new Database(file);
  for (const m of MIGRATIONS.slice(0, 7)) m(raw, REAL_CLOCK);
  const insert = raw.prepare(
    'INSERT INTO sim_site VALUES (@name, @campaign, @done, @vim, @busy_state, @busy_owner, @options)',
  );
  for (const r of rows) insert.run(r);
  raw.pragma(`application_id = ${APPLICATION_ID}`);
  raw.pragma('user_version = 7');
  raw.close();
}

function tables(file: string): string[] {
  const d = new Database(file, { readonly: true });
  try {
    return d.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
  } finally {
    d.close();
  }
}

function siteRows(file: string): unknown[] {
  const d = new Database(sitesFileOf(file), { fileMustExist: true });
  try {
    return d.prepare('SELECT * FROM sim_site ORDER BY name').all();
  } finally {
    d.close();
  }
}

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

describe('the simulated sites move out of the database', () => {
  test('a schema-7 file: its sim_site rows are copied into <database>.sites, and the table is dropped', async () => {
    schema7(t.db, ROWS);
    (await openDb(t.db, { create: true }))!.close();
    expect(tables(t.db)).not.toContain('sim_site');
    expect(siteRows(t.db)).toEqual(ROWS);
    const sites = new Database(sitesFileOf(t.db), { readonly: true });
    expect(sites.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(sites.pragma('user_version', { simple: true })).toBe(1);
    sites.close();
    // Once: the next open finds the schema current and leaves the sites file alone.
    const before = fs.statSync(sitesFileOf(t.db)).mtimeMs;
    const db = (await openDb(t.db, { create: false }))!;
    expect(await db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    db.close();
    expect(fs.statSync(sitesFileOf(t.db)).mtimeMs).toBe(before);
  });

  test('a reader migrates too (a read command on an old file is its first open by this dcm)', async () => {
    schema7(t.db, ROWS);
    (await openDb(t.db, { create: false }))!.close();
    expect(tables(t.db)).not.toContain('sim_site');
    expect(siteRows(t.db)).toEqual(ROWS);
  });

  test('a sites file that already has the rows (a crash after the copy, before the drop) keeps its own', async () => {
    schema7(t.db, ROWS);
    // The copy of a first attempt, committed; the site moved on since (`a` of a newer campaign).
    const newer = { ...ROWS[0], campaign: 'c2', done: 0, vim: 'building' };
    const sites = new Database(sitesFileOf(t.db));
    sites.exec(
      'CREATE TABLE sim_site (name TEXT PRIMARY KEY, campaign TEXT NOT NULL, done INTEGER NOT NULL, vim TEXT NOT NULL, busy_state TEXT, busy_owner TEXT, options TEXT)',
    );
    sites.prepare('INSERT INTO sim_site VALUES (@name, @campaign, @done, @vim, @busy_state, @busy_owner, @options)').run(newer);
    sites.close();
    (await openDb(t.db, { create: true }))!.close();
    expect(tables(t.db)).not.toContain('sim_site');
    expect(siteRows(t.db)).toEqual([newer, ROWS[1]]);
  });

  test('no rows, no sites file: a new database, and an old one whose sim driver never ran', async () => {
    (await openDb(t.db, { create: true }))!.close();
    expect(tables(t.db)).not.toContain('sim_site');
    schema7(`${t.dir}/old.db`, []);
    (await openDb(`${t.dir}/old.db`, { create: true }))!.close();
    expect(tables(`${t.dir}/old.db`)).not.toContain('sim_site');
    expect(fs.readdirSync(t.dir).filter((f) => f.includes('.sites'))).toEqual([]);
  });
});
