/**
 * `dcm db check` and `dcm db backup`: SQLite's own integrity check and online backup. Neither
 * migrates nor changes the file, so a file this dcm would refuse to write (a newer one, a damaged
 * one) can still be checked and copied.
 */
import type DatabaseT from 'better-sqlite3';
import { requireCjs } from '../platform/cjs.js';

// Through require: see platform/cjs.ts.
const Database = requireCjs('better-sqlite3') as typeof DatabaseT;
import { isCorrupt } from './faults.js';
import { readerSnapshot, type Db } from './open.js';
import { SqliteDb } from '../platform/sqlite-db.js';

/**
 * A plain connection to an existing file, with no pragma that writes. Not a read-only one: on
 * close, SQLite removes the -wal and -shm only for a connection that could write them, and a
 * check must not leave files that look like a removed database's leftovers. In a directory we
 * cannot write in, an exact copy in memory (see readerSnapshot).
 */
export function openForMaintenance(real: string): SqliteDb {
  const image = readerSnapshot(real);
  const db = image ? new Database(image) : new Database(real, { fileMustExist: true });
  db.pragma('busy_timeout = 10000');
  return new SqliteDb(db);
}

/** `PRAGMA quick_check` (apply's, before it trusts the steps): ['ok'], or the first problems SQLite found. */
export async function quickCheck(db: Db): Promise<string[]> {
  return (await db.pragma('quick_check', { simple: false }) as { quick_check: string }[]).map((r) => r.quick_check);
}

/** `PRAGMA integrity_check`: ['ok'], or the problems SQLite found (at most `max`). */
export async function integrityCheck(db: Db, max = 100): Promise<string[]> {
  try {
    return (await db.pragma(`integrity_check(${max})`) as { integrity_check: string }[]).map((r) => r.integrity_check);
  } catch (err) {
    // So damaged that the check itself cannot run (a broken schema page): that is the answer.
    if (isCorrupt(err)) return [String((err as Error).message)];
    throw err;
  }
}

/**
 * Copy the database to `dest` with SQLite's online backup. Another process writing meanwhile (an
 * apply) would restart a backup made in small steps, for ever on a busy file; one step copies the
 * whole file inside one read transaction (a WAL reader, so the writer is not held up).
 */
export async function backupTo(db: SqliteDb, dest: string): Promise<{ totalPages: number }> {
  const r = await db.raw.backup(dest, { progress: () => 1 << 30 });
  return { totalPages: r.totalPages };
}
