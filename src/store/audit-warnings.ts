/**
 * Steps that ended `complete` while the audit after their last state disagreed with what the
 * strategy meant to leave (or the site did not answer it): the warning is the end of the step's
 * details (orchestrator/audit-after.ts; domain/report-audit.ts reads the same words). Issue 49:
 * they are said in the closing summary, `status`, the report's cards, an event and the exit code.
 */
import type { Db } from './open.js';
import { sql } from './statements.js';

export interface AuditWarnings {
  count: number;
  /** The first `limit` of them in step order: the subcloud and its step's details. */
  first: { cloud: string; details: string }[];
}

const WARNED = `st.state = 'complete' AND (st.details LIKE 'warning: audit%' OR st.details LIKE '%; warning: audit%')`;

export async function auditWarnings(db: Db, limit: number): Promise<AuditWarnings> {
  const first = (await sql(
    db,
    `SELECT sc.name AS cloud, st.details FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE ${WARNED} ORDER BY st.id LIMIT $1`,
  ).all(limit)) as { cloud: string; details: string }[];
  const count = first.length < limit ? first.length : Number(await sql(db, `SELECT count(*) FROM strategy_step st WHERE ${WARNED}`).pluck().get());
  return { count, first };
}
