import fs from 'node:fs';
/** What every command gets: where the file is. Opening and closing it lives here. */
import { openDb, type Db } from '../store/open.js';

export interface Ctx {
  dbPath: string;
  /**
   * Called on a write command's result before its transaction commits: a result that cannot be
   * shown (an unknown `-c` column) throws, and the change is rolled back with it.
   */
  checkResult?: (result: unknown) => void;
}

/**
 * Run `fn` on the file, creating it (and the schema) if missing. A command that fails on a file it
 * just created removes it again: bad input leaves no trace.
 */
export function withWriteDb<T>(ctx: Ctx, fn: (db: Db) => T): T {
  const existed = fs.existsSync(ctx.dbPath);
  const db = openDb(ctx.dbPath, { create: true })!;
  try {
    // Inner `immediate()` calls become savepoints of this transaction.
    return db
      .transaction(() => {
        const result = fn(db);
        ctx.checkResult?.(result);
        return result;
      })
      .immediate();
  } catch (err) {
    if (!existed) {
      db.close();
      for (const suffix of ['', '-wal', '-shm']) fs.rmSync(ctx.dbPath + suffix, { force: true });
    }
    throw err;
  } finally {
    if (db.open) db.close();
  }
}

/** Run `fn` on the file, or return `empty` when the file does not exist (nothing is created). */
export function withReadDb<T>(ctx: Ctx, empty: T, fn: (db: Db) => T): T {
  const db = openDb(ctx.dbPath, { create: false });
  if (!db) return empty;
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** One read-modify-write: BEGIN IMMEDIATE, so a concurrent writer waits instead of failing. */
export function immediate<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}
