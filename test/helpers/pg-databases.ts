/**
 * Databases of their own for the tests of the PostgreSQL pass: one per tempDir(), created on the
 * pass's cluster (DCM_TEST_PG_URL, or a test's own cluster while it sets it) and dropped by the
 * cleanup, whatever connection is still open.
 */
import crypto from 'node:crypto';
import { connectionLost, SyncPg } from './sync-pg.js';

/** One superuser connection per cluster (a test may run a cluster of its own). */
const admins = new Map<string, SyncPg>();

/** `text` as the cluster's superuser; once more on a new connection if the old one was cut. */
function asAdmin(base: string, text: string): void {
  const conn = () => admins.get(base) ?? admins.set(base, new SyncPg(base)).get(base)!;
  try {
    conn().query(text);
  } catch (err) {
    // A restarted cluster (a test's fault) cut it: the statement is one that can be sent again.
    if (!connectionLost(err)) throw err;
    admins.get(base)?.close();
    admins.delete(base);
    conn().query(text);
  }
}

/** The cluster's address when this run is the PostgreSQL pass, else undefined. */
export function pgTestUrl(): string | undefined {
  return process.env.DCM_TEST_PG_URL || undefined;
}

/** A new empty database: its address, and how to drop it. */
export function freshPgDatabase(): { url: string; drop: () => void } {
  const base = pgTestUrl();
  if (!base) throw new Error('not the PostgreSQL pass (DCM_TEST_PG_URL is unset)');
  const name = `dcm_t_${crypto.randomBytes(6).toString('hex')}`;
  asAdmin(base, `CREATE DATABASE ${name}`);
  // The address names the database between the (empty) host and the query: `…@/postgres?host=…`.
  const url = base.replace(/@\/[^?]*/, `@/${name}`);
  return { url, drop: () => asAdmin(base, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
