/**
 * What an address means (issue 32), on the PostgreSQL pass's real server: a store error is one
 * line, TLS included (node-postgres's nine-line warning about sslmode never reaches stderr); a
 * search_path naming a schema that does not exist, or one that holds no dcm database, is an error
 * naming what was found (exit 1), never an empty fleet, and nothing is written.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dcm, tempDir } from '../helpers/cli.js';
import { SyncPg } from '../helpers/sync-pg.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let t: ReturnType<typeof tempDir>;
let conn: SyncPg;

const withParam = (url: string, param: string) => `${url}${url.includes('?') ? '&' : '?'}${param}`;
const schemas = () => (conn.query(`SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' ORDER BY 1`).rows as { nspname: string }[]).map((r) => r.nspname);
const tablesIn = (schema: string) => (conn.query(`SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, [schema]).rows as { tablename: string }[]).map((r) => r.tablename);

beforeAll(() => {
  t = tempDir();
  conn = new SyncPg(t.db);
  // A database that holds a fleet.
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'pg1', 'pg2']);
});
afterAll(() => {
  conn.close();
  t.cleanup();
});

describe('TLS', () => {
  test.each(['require', 'prefer', 'verify-ca'])('sslmode=%s on a server without TLS: one line, exit 1, no warning', (mode) => {
    // A process of its own: what node-postgres would print goes to the process's stderr.
    const r = dcm(['--db', withParam(t.db, `sslmode=${mode}`), 'subcloud', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')).toEqual([expect.stringMatching(/^error: cannot open database postgresql:\/\/.*sslmode=.*: The server does not support SSL connections$/), '']);
    expect(r.stdout).toBe('');
  });
});

describe('a search_path that names no dcm database', () => {
  test('a schema that does not exist: an error naming it and the schemas there are, for readers and writers; nothing written', () => {
    const url = withParam(t.db, 'options=-csearch_path%3Dnosuch');
    const before = schemas();
    for (const args of [['subcloud', 'list'], ['strategy', 'show'], ['subcloud', 'add', 'x1']]) {
      const r = dcmQuick(['--db', url, ...args]);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 1]);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^error: postgresql:\/\/.*: no schema of its search_path \(nosuch\) exists in the database \(its schemas: .*public.*\)\n$/);
    }
    expect(schemas()).toEqual(before);
    // The fleet is where it was.
    expect(dcmQuickOk(['--db', t.db, 'subcloud', 'list', '-c', 'name', '-f', 'value']).stdout).toBe('pg1\npg2\n');
  });

  test('a schema that exists and holds no dcm database: a reader is told so (not an empty fleet); a write makes one there', () => {
    conn.query('CREATE SCHEMA IF NOT EXISTS other');
    const url = withParam(t.db, 'options=-csearch_path%3Dother');
    const r = dcmQuick(['--db', url, 'subcloud', 'list']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: postgresql:\/\/.* names the schema other \(search_path\), which holds no dcm database; a write command \(subcloud add\) makes one there\n$/);
    // The same through libpq's PGOPTIONS.
    const viaEnv = dcmQuick(['--db', t.db, 'subcloud', 'list'], { env: { PGOPTIONS: '-c search_path=other' } });
    expect(viaEnv.code).toBe(1);
    expect(viaEnv.stderr).toContain('names the schema other (search_path)');
    expect(tablesIn('other')).toEqual([]);

    dcmQuickOk(['--db', url, 'subcloud', 'add', 'o1']);
    expect(tablesIn('other')).toContain('dcm_meta');
    expect(dcmQuickOk(['--db', url, 'subcloud', 'list', '-c', 'name', '-f', 'value']).stdout).toBe('o1\n');
    // A database with no search_path named still reads as empty when it holds no dcm schema (README).
  });
});
