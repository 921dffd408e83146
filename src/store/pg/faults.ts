/**
 * What a PostgreSQL server's failure means to the user, in one line naming the database (its
 * address without the password): the server's own message, or the connection's. A busy database
 * (a lock not had within the wait) keeps SQLite's code, which the callers handle their own way.
 */
import { DcmError, OperationError } from '../../domain/errors.js';
import { PgError } from '../../platform/pg-sync.js';
import { shownUrl } from './open.js';

export function serverFault(err: unknown, url: string): DcmError | null {
  if (!(err instanceof PgError) || err.code === 'SQLITE_BUSY') return null;
  if (err.code === '53100') return new OperationError(`disk full on the server of ${shownUrl(url)}: nothing committed was lost; free space, then run the command again`);
  return new OperationError(`database ${shownUrl(url)}: ${err.message.split('\n')[0]}`);
}

export function withServerFaults<T>(url: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw serverFault(err, url) ?? err;
  }
}
