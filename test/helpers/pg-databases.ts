/**
 * Databases of their own for the tests of the PostgreSQL pass: one per tempDir(), created on the
 * pass's cluster (DCM_TEST_PG_URL) and dropped by the cleanup, whatever connection is still open.
 */
import crypto from 'node:crypto';
import { SyncPg } from '../../src/platform/pg-sync.js';

let admin: SyncPg | null = null;

/** The cluster's address when this run is the PostgreSQL pass, else undefined. */
export function pgTestUrl(): string | undefined {
  return process.env.DCM_TEST_PG_URL || undefined;
}

/** A new empty database: its address, and how to drop it. */
export function freshPgDatabase(): { url: string; drop: () => void } {
  const base = pgTestUrl();
  if (!base) throw new Error('not the PostgreSQL pass (DCM_TEST_PG_URL is unset)');
  admin ??= new SyncPg(base);
  const name = `dcm_t_${crypto.randomBytes(6).toString('hex')}`;
  admin.query(`CREATE DATABASE ${name}`);
  // The address names the database between the (empty) host and the query: `…@/postgres?host=…`.
  const url = base.replace(/@\/[^?]*/, `@/${name}`);
  return { url, drop: () => void admin?.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
