/**
 * `dcm db check` and `dcm db backup FILE` (SPEC §2.1): how a user finds out whether the file is
 * sound, and keeps a copy of it, while an apply runs or not.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { OperationError, UsageError } from '../domain/errors.js';
import { list, show, type Result } from './plain-results.js';
import type { Outcome } from './results.js';
import { fileFault, withServerFaults } from '../store/faults.js';
import { tempName } from '../store/leftovers.js';
import { backupTo, integrityCheck, openForMaintenance } from '../store/maintenance.js';
import { checkDbPath } from '../store/open.js';
import type { SqliteDb } from '../platform/sqlite-db.js';
import { canWriteIn, inspectDbPath } from '../store/path.js';
import { publish, type Ctx } from './context.js';
import { PRIVATE_FILE } from '../platform/private.js';
import { isPgUrl, shownUrl } from '../domain/db-url.js';

/** The existing database, opened without migrating or writing; an error when there is none. */
function openExisting(ctx: Ctx): SqliteDb {
  if (!checkDbPath(ctx.dbPath, true)) throw new OperationError(`${ctx.dbPath} does not exist`);
  try {
    return openForMaintenance(inspectDbPath(ctx.dbPath).real);
  } catch (err) {
    throw fileFault(err, ctx.dbPath) ?? err;
  }
}

/** `ok` and exit 0, or what is wrong, one problem a row, and exit 1. */
export async function dbCheck(ctx: Ctx): Promise<Outcome> {
  if (isPgUrl(ctx.dbPath)) {
    const { checkPgDatabase } = await import('../store/pg/check.js');
    const problems = await withServerFaults(ctx.dbPath, () => checkPgDatabase(ctx.dbPath));
    const ok = problems.length === 1 && problems[0] === 'ok';
    return { result: list(['integrity check'], problems.map((p) => [p])), exitCode: ok ? 0 : 1 };
  }
  const db = openExisting(ctx);
  let problems: string[];
  try {
    problems = await integrityCheck(db);
  } catch (err) {
    throw fileFault(err, ctx.dbPath) ?? err;
  } finally {
    db.close();
  }
  const ok = problems.length === 1 && problems[0] === 'ok';
  return { result: list(['integrity check'], problems.map((p) => [p])), exitCode: ok ? 0 : 1 };
}

/**
 * Copy the database to `file`, never over an existing file: a backup that silently replaced the
 * only good copy with a damaged one would be worse than none. The copy is made under a temporary
 * name and linked into place complete, so a full disk or a kill leaves no half backup at `file`.
 */
export async function dbBackup(ctx: Ctx, file: string): Promise<Result> {
  if (isPgUrl(ctx.dbPath)) {
    // The server's own tool copies a database consistently while an apply writes to it.
    throw new UsageError(`db backup copies a database file; for ${shownUrl(ctx.dbPath)} use the server's pg_dump (pg_dump -Fc -f ${file || 'dcm.dump'} '<address>')`);
  }
  if (file === '' || file.endsWith('/')) throw new UsageError(`give the backup a file name${file ? `, not the directory ${file}` : ''}`);
  let target: ReturnType<typeof inspectDbPath>;
  try {
    target = inspectDbPath(file);
  } catch (err) {
    throw new OperationError(`cannot back up to ${file}: ${(err as Error).message.replace(/^cannot (use .* as the database|open database .*?): /, '')}`);
  }
  if (target.exists) throw new OperationError(`${file} exists; remove it or name another file`);
  if (!canWriteIn(path.dirname(target.real))) throw new OperationError(`cannot write in ${path.dirname(file)} (read-only)`);
  const db = openExisting(ctx);
  const tmp = tempName(target.real, process.pid, crypto.randomBytes(4).toString('hex'));
  try {
    // Created private before SQLite writes to it: a copy holds what the file holds (a password).
    fs.closeSync(fs.openSync(tmp, 'wx', PRIVATE_FILE));
    const { totalPages } = await backupTo(db, tmp);
    const result = show([
      ['backup', file],
      ['pages', totalPages],
      ['bytes', fs.statSync(tmp).size],
    ]);
    // A result that cannot be shown (an unknown -c column) fails the command: then no backup either.
    ctx.checkResult?.(result);
    if (!publish(tmp, target.real)) throw new OperationError(`${file} exists; remove it or name another file`);
    return result;
  } catch (err) {
    throw fileFault(err, file) ?? err;
  } finally {
    db.close();
    for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(tmp + suffix, { force: true });
  }
}
