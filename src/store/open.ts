/**
 * Opening the dcm file (SPEC §2): path resolution, refusal of foreign or newer files before
 * anything is written, pragmas, forward migrations.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { OperationError } from '../domain/errors.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION } from './migrations.js';

export type Db = Database.Database;

export { resolveDbPath } from './path.js';

const SQLITE_MAGIC = 'SQLite format 3\0';

/**
 * Refuse what is not a file we may open, without touching it. Returns false for a missing file
 * when `mustExist` (a reader's "nothing there").
 */
export function checkDbPath(file: string, mustExist: boolean): boolean {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    const dir = path.dirname(path.resolve(file));
    if (!fs.existsSync(dir)) {
      throw new OperationError(`cannot open database ${file}: directory ${path.dirname(file)} does not exist`);
    }
    if (mustExist) return false;
    return true;
  }
  if (st.isDirectory()) throw new OperationError(`cannot open database ${file}: it is a directory`);
  if (st.size > 0) {
    const fd = fs.openSync(file, 'r');
    const head = Buffer.alloc(16);
    try {
      fs.readSync(fd, head, 0, 16, 0);
    } finally {
      fs.closeSync(fd);
    }
    if (head.toString('latin1') !== SQLITE_MAGIC) {
      throw new OperationError(`${file} is not a dcm database (not an SQLite file)`);
    }
  }
  return true;
}

export interface OpenOptions {
  /** Write commands create the file and schema; read commands get null for a missing file. */
  create: boolean;
}

/** Open the file, or return null when it is missing and `create` is false. */
export function openDb(file: string, opts: OpenOptions): Db | null {
  if (!checkDbPath(file, !opts.create)) return null;
  let db: Db;
  try {
    db = new Database(file, { fileMustExist: !opts.create });
  } catch (err) {
    throw new OperationError(`cannot open database ${file}: ${(err as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 10000');
    const version = db.pragma('user_version', { simple: true }) as number;
    const appId = db.pragma('application_id', { simple: true }) as number;
    const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number };
    if (appId !== APPLICATION_ID && (appId !== 0 || tables.n > 0 || version !== 0)) {
      throw new OperationError(`${file} is not a dcm database`);
    }
    if (!opts.create && version === 0 && tables.n === 0) {
      // An empty file (`touch dcm.db`) holds nothing to read; a reader does not write the schema.
      db.close();
      return null;
    }
    if (version > SCHEMA_VERSION) {
      throw new OperationError(
        `${file} was written by a newer dcm (schema version ${version}; this dcm knows up to ${SCHEMA_VERSION})`,
      );
    }
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
    // WAL + NORMAL: a commit survives the death of the process (kill -9); only a power loss may
    // roll back the last transactions, never corrupt the file.
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    if (version < SCHEMA_VERSION) migrate(db, version);
    return db;
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_NOTADB') {
      throw new OperationError(`${file} is not a dcm database`);
    }
    throw err;
  }
}

function migrate(db: Db, from: number): void {
  db.transaction(() => {
    // Re-read inside the write lock: another process may have migrated meanwhile.
    const now = db.pragma('user_version', { simple: true }) as number;
    for (let v = Math.max(from, now); v < SCHEMA_VERSION; v++) MIGRATIONS[v](db);
    db.pragma(`application_id = ${APPLICATION_ID}`);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}
