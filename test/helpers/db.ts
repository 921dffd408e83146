/**
 * A test's own look into the database, whichever store it is on: better-sqlite3 on a file, or the
 * same face over a PostgreSQL database in the PostgreSQL pass (src/platform/pg-database.ts), so a
 * test's SQL for a look or a tweak the CLI does not offer runs on both.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { PgDatabase } from '../../src/platform/pg-database.js';
import { SyncPg } from './sync-pg.js';
import { SqliteDb } from '../../src/platform/sqlite-db.js';
import type { Db } from '../../src/platform/db.js';
import { isPgUrl } from '../../src/domain/db-url.js';
import { PG_STORE } from '../../src/store/pg/schema.js';

export async function openTestDb(db: string, opts: Database.Options = {}): Promise<Db> {
  if (!isPgUrl(db)) return new SqliteDb(new Database(db, opts));
  // Versioned as dcm's own connections are: a test's tweak wakes an orchestrator as a command's does.
  const pg = await PgDatabase.open(db, db, PG_STORE);
  if (opts.timeout !== undefined) await pg.busyWait(opts.timeout);
  return pg;
}

/** The sim driver's sites on PostgreSQL: their own schema in the store's database. */
export async function openTestSites(db: string): Promise<Db> {
  const pg = await PgDatabase.open(db, db);
  await pg.exec('SET search_path TO dcm_sim');
  return pg;
}

/**
 * A digest of everything a PostgreSQL database holds for dcm (the store's tables and the sim's
 * sites), row by row: a refused command must leave it as it was, as it leaves a file byte for byte.
 */
export function pgDigest(db: string): string {
  const pg = new SyncPg(db);
  try {
    const tables = pg.query(`SELECT schemaname || '.' || tablename AS t FROM pg_tables WHERE schemaname IN ('public', 'dcm_sim') ORDER BY 1`).rows as { t: string }[];
    const h = createHash('sha256');
    for (const { t } of tables) h.update(t).update(JSON.stringify(pg.query(`SELECT * FROM ${t} ORDER BY 1`, [], true).rows));
    return h.digest('hex');
  } finally {
    pg.close();
  }
}

/** What the database holds, as one digest: the file's bytes, or the server database's rows. */
export function storeState(db: string): string {
  return isPgUrl(db) ? pgDigest(db) : createHash('sha256').update(fs.readFileSync(db)).digest('hex');
}

const pgOfDir = new Map<string, string>();

/** tempDir's record of which database belongs to a test's folder in the PostgreSQL pass. */
export function notePgDatabase(dir: string, url: string): void {
  pgOfDir.set(dir, url);
}

export function pgDatabaseOf(dir: string): string | undefined {
  return pgOfDir.get(dir);
}
