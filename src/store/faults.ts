/**
 * What a file fault means to the user (SPEC §2.1 "Faults"): a SQLite or file-system error turned
 * into one DcmError with the SPEC's wording, so every command (and the orchestrator) says the same
 * thing. A process under `ulimit -f` is not killed by SIGXFSZ: Node ignores that signal, so the
 * write fails with EFBIG and SQLite reports it as an I/O error, which lands here.
 */
import path from 'node:path';
import { DcmError, OperationError } from '../domain/errors.js';
import { canWriteIn } from './path.js';
import { shownUrl } from '../domain/db-url.js';

type Coded = { code?: unknown; message?: unknown };

function codeOf(err: unknown): string {
  const c = (err as Coded | null)?.code;
  return typeof c === 'string' ? c : '';
}

const DISK_FULL_ERRNO = new Set(['ENOSPC', 'EFBIG', 'EDQUOT']);
const READ_ONLY_ERRNO = new Set(['EROFS', 'EACCES', 'EPERM']);

/** The error is a full disk, a file-size limit, or a failed write/sync. */
export function isDiskFull(err: unknown): boolean {
  const code = codeOf(err);
  if (code === 'SQLITE_FULL' || DISK_FULL_ERRNO.has(code)) return true;
  return code.startsWith('SQLITE_IOERR') && !/READ|ACCESS|LOCK|NOMEM/.test(code);
}

export function isCorrupt(err: unknown): boolean {
  const code = codeOf(err);
  return code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB';
}

/**
 * Turn a fault on `file` into a DcmError, or null when `err` is not a file fault (a bug, a
 * DcmError already, SQLITE_BUSY, which callers handle their own way). `then` says what to do once
 * space is freed: an ordinary command is run again; the orchestrator says `dcm strategy apply
 * resumes`.
 */
export function fileFault(err: unknown, file: string, then = 'run the command again'): DcmError | null {
  if (err instanceof DcmError) return null;
  const code = codeOf(err);
  if (!code) return null;
  const why = String((err as Coded).message ?? code).split('\n')[0];
  if (isDiskFull(err)) {
    return new OperationError(`disk full writing ${file}: nothing committed was lost; free space, then ${then}`);
  }
  if (isCorrupt(err)) {
    return new OperationError(`${file} is damaged (${why}); nothing was written. dcm db check says what is wrong; restore a backup`);
  }
  if (code.startsWith('SQLITE_IOERR')) return new OperationError(`I/O error on ${file} (${why})`);
  if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || READ_ONLY_ERRNO.has(code)) {
    const dir = path.dirname(path.resolve(file));
    if (!canWriteIn(dir)) return new OperationError(`cannot write in ${path.dirname(file)} (read-only)`);
    if (code.startsWith('SQLITE_READONLY')) return new OperationError(`cannot write ${file} (read-only)`);
    return new OperationError(`cannot open database ${file} (${why})`);
  }
  return null;
}

/** Run `fn`, rethrowing a file fault as its DcmError (anything else unchanged). */
/** `fn`'s faults of the file as the user's errors; an asynchronous `fn`'s as well. */
export function withFileFaults<T>(file: string, fn: () => Promise<T>, then?: string): Promise<T>;
export function withFileFaults<T>(file: string, fn: () => T, then?: string): T;
export function withFileFaults<T>(file: string, fn: () => T, then?: string): T {
  return faultsAs(fn, (err) => fileFault(err, file, then));
}

/** `fn`, its errors (thrown, or its promise's) mapped by `as` when it knows them. */
function faultsAs<T>(fn: () => T, as: (err: unknown) => Error | null): T {
  try {
    const r = fn();
    if (r instanceof Promise) {
      return r.catch((err: unknown) => {
        throw as(err) ?? err;
      }) as T;
    }
    return r;
  } catch (err) {
    throw as(err) ?? err;
  }
}

export type Fault = 'busy' | 'full' | 'io' | 'corrupt';

/** What kind of fault of the file `err` is, if any: the orchestrator waits on one, stops on the others. */
export function faultOf(err: unknown): Fault | null {
  const code = codeOf(err);
  if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED') return 'busy';
  if (isDiskFull(err)) return 'full';
  if (isCorrupt(err)) return 'corrupt';
  if (code.startsWith('SQLITE_IOERR') || code === 'EIO') return 'io';
  return null;
}

/** The one-line error for a fault met while applying (the strategy stays applying), or null. */
export function applyFaultError(err: unknown, file: string): DcmError | null {
  const fault = faultOf(err);
  return fault && fault !== 'busy' ? fileFault(err, file, 'dcm strategy apply resumes') : null;
}

/*
 * A PostgreSQL server's failure (store/pg/), in one line naming the database by its address
 * without the password: the server's own message, or the connection's. A busy database (a lock
 * not had within the wait) keeps SQLite's code, which the callers handle their own way.
 */
// Told by name: the client's modules (platform/pg-client.ts) are loaded only for a server.
const isPgError = (err: unknown): err is Error & { code?: string } => (err as Error | null)?.name === 'PgError';

export function serverFault(err: unknown, url: string): DcmError | null {
  if (!isPgError(err) || err.code === 'SQLITE_BUSY') return null;
  if (err.code === '53100') return new OperationError(`disk full on the server of ${shownUrl(url)}: nothing committed was lost; free space, then run the command again`);
  return new OperationError(`database ${shownUrl(url)}: ${err.message.split('\n')[0]}`);
}

export function withServerFaults<T>(url: string, fn: () => Promise<T>): Promise<T>;
export function withServerFaults<T>(url: string, fn: () => T): T;
export function withServerFaults<T>(url: string, fn: () => T): T {
  return faultsAs(fn, (err) => serverFault(err, url));
}
