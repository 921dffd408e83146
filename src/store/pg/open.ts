/**
 * Opening a dcm database on a PostgreSQL server (`--db postgresql://…`, or `postgres://`): the
 * connection, the refusal of a database that is not dcm's or is newer, and the schema written on
 * the first write. What the address leaves out comes as libpq would take it (a service file, the
 * PG* variables, a password file: platform/pg-params.ts), so `--db postgresql:///dcm` with PGHOST
 * and PGUSER set works.
 */
import { OperationError } from '../../domain/errors.js';
import { SCHEMA_VERSION } from '../migrations.js';
import { PgDatabase } from '../../platform/pg-database.js';
import { namedSearchPath, shownUrl } from '../../domain/db-url.js';
import { PG_FIRST_VERSION, PG_MIGRATIONS, PG_SCHEMA, PG_STORE, pgSeeds } from './schema.js';
import { useBatchWrites } from '../transitions.js';
import { writeBatchPg } from './transitions.js';
import type { Db } from '../open.js';
import type { Clock } from '../../platform/clock.js';

export interface PgOpenOptions {
  create: boolean;
  /** libpq's PGOPTIONS (a search_path may be named there too); the process's by default. */
  pgOptions?: string;
  /** The opener's clock (store/open.ts OpenOptions). */
  clock?: Clock;
}

/** Open the database; null when it has no dcm schema yet and the caller only reads. */
export async function openPgDb(url: string, opts: PgOpenOptions): Promise<PgDatabase | null> {
  const shown = shownUrl(url);
  let db: PgDatabase;
  try {
    db = await PgDatabase.open(shown, url, PG_STORE);
    if (opts.clock) db.clock = opts.clock;
  } catch (err) {
    throw new OperationError(`cannot open database ${shown}: ${(err as Error).message}`);
  }
  try {
    // As a file's busy timeout (store/open.ts): wait up to 10 s for another writer, then say busy.
    await db.busyWait(10_000);
    let version = await schemaVersion(db, shown);
    if (version === 0 && !opts.create) {
      // A schema named on purpose (`options=-csearch_path=…`) that holds no dcm schema is a
      // mistyped name more likely than a new fleet: said, rather than read as an empty fleet.
      const named = namedSearchPath(url, opts.pgOptions ?? process.env.PGOPTIONS);
      if (named !== null) {
        throw new OperationError(`${shown} names the schema ${named} (search_path), which holds no dcm database; a write command (subcloud add) makes one there`);
      }
      db.close();
      return null;
    }
    if (version > SCHEMA_VERSION) {
      throw new OperationError(`${shown} was written by a newer dcm (schema version ${version}; this dcm knows up to ${SCHEMA_VERSION})`);
    }
    if (version < SCHEMA_VERSION) {
      await db.transaction(async (tx) => {
        // Read again under the writers' lock: another dcm may have written the schema meanwhile.
        version = await schemaVersion(db, shown);
        if (version === 0) {
          // The first schema on PostgreSQL, then the same steps an older database takes.
          await tx.exec(PG_SCHEMA);
          for (const q of pgSeeds(db.clock)) await db.query(q);
          await db.query({
            text: `INSERT INTO dcm_meta (key, value) VALUES ('application', 'dcm'), ('schema_version', $1), ('data_version', '0')`,
            values: [String(PG_FIRST_VERSION)],
          });
          version = PG_FIRST_VERSION;
        }
        for (let v = version; v < SCHEMA_VERSION; v++) await tx.exec(PG_MIGRATIONS[v]);
        await db.query({ text: `UPDATE dcm_meta SET value = $1 WHERE key = 'schema_version'`, values: [String(SCHEMA_VERSION)] });
      }).immediate();
    }
    // A batch's transitions in one statement over arrays, not a round trip per row.
    useBatchWrites(db as unknown as Db, writeBatchPg);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/**
 * The schema version dcm wrote in this database, 0 when it holds no dcm schema. Tables of someone
 * else's in the schema dcm would use (search_path's first) make it not a dcm database.
 */
async function schemaVersion(db: PgDatabase, shown: string): Promise<number> {
  const rows = (await db.query({
    text: `SELECT (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()) AS tables,
                  to_regclass('dcm_meta') IS NOT NULL AS marked,
                  current_schema() IS NOT NULL AS has_schema, current_setting('search_path') AS search_path`,
  })).rows as { tables: number; marked: boolean; has_schema: boolean; search_path: string }[];
  const { tables, marked, has_schema: hasSchema, search_path: searchPath } = rows[0];
  // No schema of the search_path exists (`options=-csearch_path=nosuch`): nothing can be read
  // there, and a write would fail half-way with the server's "no schema has been selected".
  if (!hasSchema) {
    const found = (await db.query({
      text: `SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' ORDER BY nspname`,
      array: true,
    })).rows.map((r) => (r as string[])[0]);
    throw new OperationError(`${shown}: no schema of its search_path (${searchPath}) exists in the database (its schemas: ${found.join(', ') || 'none'})`);
  }
  if (!marked) {
    if (tables > 0) throw new OperationError(`${shown} is not a dcm database (it holds other tables)`);
    return 0;
  }
  const meta = (await db.query({ text: `SELECT key, value FROM dcm_meta` })).rows as { key: string; value: string }[];
  const get = (k: string) => meta.find((r) => r.key === k)?.value;
  if (get('application') !== 'dcm') throw new OperationError(`${shown} is not a dcm database`);
  return Number(get('schema_version'));
}
