/**
 * How the PostgreSQL store connects, and what it makes of the server's errors: a connection tried
 * again while the server says it will be back, the errors under the codes the store tells apart,
 * and which statements may be sent again on a new connection.
 */
import { connectionLost, PgClient, PgError, queryScheduler } from './pg-client.js';
import type { PgParams } from './pg-params.js';

/**
 * PostgreSQL's errors under the codes the store already tells apart: a lock not had within the
 * wait (lock_timeout) is SQLite's busy; a unique key is a unique constraint.
 */
export function asStoreError(err: unknown): unknown {
  if (!(err instanceof PgError)) return err;
  // A lost connection is busy too: nothing of the transaction was committed (a COMMIT whose answer
  // was lost is asked about first: PgDatabase's committedAfterAll), and the next try (the
  // orchestrator's committer waits and tries again) runs on a new connection.
  const code =
    err.code === '55P03' || err.code === '40P01' || err.code === '40001' || connectionLost(err)
      ? 'SQLITE_BUSY'
      : err.code === '23505'
        ? 'SQLITE_CONSTRAINT_UNIQUE'
        : err.code?.startsWith('23')
          ? 'SQLITE_CONSTRAINT'
          : err.code;
  const e = new PgError(err.message, code, connectionLost(err));
  e.stack = err.stack;
  return e;
}

/** Statements that change nothing in the database: sent again after a lost connection. */
export const RESENDABLE = /^\s*(SELECT|SET|SHOW|WITH\s+[^;]*\bSELECT\b(?![\s\S]*\b(INSERT|UPDATE|DELETE)\b))/i;

/**
 * How long a connection is tried again while the server says it will be back: starting up or
 * shutting down (57P03) when first connecting (a wrong address fails at once), and any lost
 * connection when connecting again (the address worked: a restart, a failover's few seconds).
 */
const RECONNECT_MS = 5_000;
const RECONNECT_EVERY_MS = 200;

export async function connect(to: string | PgParams, again: boolean): Promise<PgClient> {
  // The simulator's time when it schedules the queries (pg-client.ts), this process's otherwise.
  const s = queryScheduler();
  const now = s?.now ?? (() => performance.now());
  const until = now() + RECONNECT_MS;
  for (;;) {
    try {
      return await PgClient.connect(to);
    } catch (err) {
      const transient = again ? connectionLost(err) : (err as { code?: string }).code === '57P03';
      if (!transient || now() >= until) throw err;
      await (s?.pause ? s.pause(RECONNECT_EVERY_MS) : new Promise((r) => setTimeout(r, RECONNECT_EVERY_MS)));
    }
  }
}
