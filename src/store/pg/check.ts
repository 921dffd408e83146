/**
 * `dcm db check` on PostgreSQL. The server keeps its own pages sound (its checksums and WAL are
 * its business), so what dcm checks is its own: the database is dcm's, at a version this dcm
 * knows, with every table of the schema, and the rows that tie the strategy together agree (no
 * step without its subcloud, no run without its step, at most one running operation per step).
 */
import { OperationError } from '../../domain/errors.js';
import { shownUrl } from '../../domain/db-url.js';
import { PgDatabase } from '../../platform/pg-database.js';
import { SCHEMA_VERSION } from '../migrations.js';
import { PG_MIGRATIONS, PG_SCHEMA, PG_STORE } from './schema.js';

const TABLES = [PG_SCHEMA, ...Object.values(PG_MIGRATIONS)].flatMap((text) => [...text.matchAll(/CREATE TABLE (\w+)/g)].map((m) => m[1]));

/** ['ok'], or the problems found, one per line. */
export async function checkPgDatabase(url: string): Promise<string[]> {
  const db = await PgDatabase.open(shownUrl(url), url, PG_STORE);
  try {
    const q = async <T>(text: string) => (await db.query({ text })).rows as T[];
    const present = new Set((await q<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = current_schema()`)).map((r) => r.t));
    if (!present.has('dcm_meta')) throw new OperationError(`${shownUrl(url)} holds no dcm database`);
    const version = Number((await q<{ value: string }>(`SELECT value FROM dcm_meta WHERE key = 'schema_version'`))[0]?.value);
    const problems: string[] = [];
    if (!(version >= 1 && version <= SCHEMA_VERSION)) problems.push(`schema version ${version} is not one this dcm knows (1 to ${SCHEMA_VERSION})`);
    for (const t of TABLES) if (!present.has(t)) problems.push(`table ${t} is missing`);
    if (problems.length === 0) {
      const count = async (what: string, text: string) => {
        const n = (await q<{ n: number }>(text))[0].n;
        if (n > 0) problems.push(`${n} ${what}`);
      };
      await count('step(s) of no subcloud', `SELECT count(*) AS n FROM strategy_step st LEFT JOIN subcloud sc ON sc.id = st.subcloud_id WHERE sc.id IS NULL`);
      await count('run(s) of no step', `SELECT count(*) AS n FROM step_history h LEFT JOIN strategy_step st ON st.id = h.step_id WHERE st.id IS NULL`);
      await count(
        'step(s) with more than one running operation',
        `SELECT count(*) AS n FROM (SELECT step_id FROM step_history WHERE outcome = 'running' GROUP BY step_id HAVING count(*) > 1) AS r`,
      );
    }
    return problems.length ? problems : ['ok'];
  } finally {
    db.close();
  }
}
