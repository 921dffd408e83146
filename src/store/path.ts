/**
 * Which file, and whether it is one we may open (SPEC §2, §2.1 "Paths"): `--db PATH`, else
 * `$DCM_DB`, else `./dcm.db`. Symlinks are followed; what SQLite cannot use as a database (a
 * directory, a FIFO, a dangling symlink, a loop) is refused here, by name and reason, before
 * SQLite sees it: SQLite would block on a FIFO, and a dangling symlink made the first write spin.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OperationError, UsageError } from '../domain/errors.js';
import { nonRegularKind } from '../platform/files.js';
import { dbAddressProblem } from '../domain/db-url.js';

/**
 * `--db ""` is a usage error (exit 2), and so is `DCM_DB=""`: an empty value is a mistake in a
 * script (an unset variable), and falling back to ./dcm.db would write to a file nobody named.
 */
export function resolveDbPath(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (option === '') throw new UsageError("option '--db' is empty: name a database file");
  if (option === undefined && env.DCM_DB === '') throw new UsageError('DCM_DB is empty: name a database file, or unset it for ./dcm.db');
  const db = option ?? env.DCM_DB ?? './dcm.db';
  // An address mistyped would otherwise be a new file of that name, and an empty fleet.
  const problem = dbAddressProblem(db);
  if (problem) throw new OperationError(option === undefined ? problem.replace('--db', 'DCM_DB') : problem);
  return db;
}

export interface DbPath {
  /** The path as the user gave it: every message names this one. */
  shown: string;
  /**
   * Where the file is (symlinks resolved). SQLite opens this one, so its `-wal` and `-shm` are
   * beside the real file, and leftovers and temporary files are looked for there.
   */
  real: string;
  exists: boolean;
}

/** Look at the path without opening it; throws an OperationError naming the path and the reason. */
export function inspectDbPath(shown: string): DbPath {
  const cannot = (why: string) => new OperationError(`cannot use ${shown} as the database: ${why}`);
  let st: fs.Stats | null = null;
  try {
    st = fs.statSync(shown);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw cannot('a symlink loop');
    if (code === 'ENOTDIR') throw cannot('a part of the path is not a directory');
    if (code === 'EACCES') throw cannot('permission denied');
    if (code === 'ENAMETOOLONG') throw cannot('the name is too long');
    if (code !== 'ENOENT') throw cannot((err as Error).message);
  }
  if (st) {
    const kind = nonRegularKind(st);
    if (kind) throw cannot(`it is ${kind}`);
    return { shown, real: fs.realpathSync(shown), exists: true };
  }
  // Missing. A symlink that names nothing is not "missing": creating through it is a surprise.
  let link: fs.Stats | null = null;
  try {
    link = fs.lstatSync(shown);
  } catch {
    /* truly missing */
  }
  if (link?.isSymbolicLink()) throw cannot(`a dangling symlink (to ${fs.readlinkSync(shown)})`);
  const dir = path.dirname(path.resolve(shown));
  let realDir: string;
  try {
    realDir = fs.realpathSync(dir);
  } catch {
    throw new OperationError(`cannot open database ${shown}: directory ${path.dirname(shown)} does not exist`);
  }
  if (!fs.statSync(realDir).isDirectory()) throw cannot(`${path.dirname(shown)} is not a directory`);
  return { shown, real: path.join(realDir, path.basename(shown)), exists: false };
}

/** Whether this process may create files in a folder (owned by platform/files.ts). */
export { canWriteIn } from '../platform/files.js';
