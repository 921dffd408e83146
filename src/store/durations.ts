/**
 * Per-state duration statistics (the `state_duration` table), per strategy type and config
 * (durationKey). They are added to when operations end well, in the orchestrator's own commit, and
 * they outlive `strategy delete`: the next strategy of the same type and config is estimated from
 * them until it has durations of its own.
 */
import crypto from 'node:crypto';
import type { Db } from './open.js';
import { greatest, least, msBetween, sql, sqlLiteral } from './statements.js';
import { now } from './clock.js';
import type { DurationStat, DurationTally } from '../domain/estimate.js';

interface StatRow {
  state: string;
  count: number;
  sum_ms: number;
  sumsq_ms: number;
  min_ms: number | null;
  max_ms: number | null;
}

function toMap(rows: StatRow[]): Map<string, DurationStat> {
  return new Map(
    rows.map((r) => [
      r.state,
      { count: r.count, sumMs: r.sum_ms, sumSqMs: r.sumsq_ms, minMs: r.min_ms ?? 0, maxMs: r.max_ms ?? 0 },
    ]),
  );
}

/**
 * What a strategy's statistics are kept under (the table's `type` column): its type and how its
 * states are performed, since a patch through one exec config (an Ansible play over a slow link)
 * takes nothing like the same patch through another, or through the sim (issue 34: estimates mixed
 * every config of one type). The exec driver's key holds a digest of the config as stored (its
 * commands, not the file's comments). The sim's is the type's own: its runs take what its latency
 * says, which is its estimate's fallback anyway. Statistics of exec runs kept by a dcm before
 * this, under the bare type, are then read as the sim's: a sim strategy that has none of its own.
 */
export function durationKey(type: string, extra: Record<string, unknown>): string {
  const driver = String(extra.driver ?? 'sim');
  if (driver === 'sim') return type;
  const config = typeof extra.exec_config === 'string' ? extra.exec_config : '';
  return `${type} ${driver} ${crypto.createHash('sha256').update(config).digest('hex').slice(0, 16)}`;
}

/**
 * One statement on a server: the batch's states in the states' order. Workers' batches run side
 * by side there (platform/pg-database.ts) and each holds the rows it upserts to its commit: all
 * taking them in one order, none waits for another in a circle. It is sent with the COMMIT
 * (Db.atCommit), its values written into its text: no round trip of its own, and the rows, which
 * every worker's batches share, are held for that last round trip only (issue 51).
 */
const PG_UPSERT = (type: string, at: string, values: string) => `INSERT INTO state_duration AS d (type, state, count, sum_ms, sumsq_ms, min_ms, max_ms, updated_at)
  SELECT ${type}, v.state, v.count, v.sum_ms, v.sumsq_ms, v.min_ms, v.max_ms, ${at}
  FROM (VALUES ${values}) AS v(state, count, sum_ms, sumsq_ms, min_ms, max_ms)
  ORDER BY v.state
  ON CONFLICT (type, state) DO UPDATE SET count = d.count + excluded.count, sum_ms = d.sum_ms + excluded.sum_ms,
    sumsq_ms = d.sumsq_ms + excluded.sumsq_ms, min_ms = LEAST(d.min_ms, excluded.min_ms),
    max_ms = GREATEST(d.max_ms, excluded.max_ms), updated_at = excluded.updated_at`;

/**
 * The server's upsert of `tally` as text; null when there is nothing to add. A state whose values
 * have no literal is left out: a sample that is no number (NaN, infinite) would spoil its state's
 * statistics for good, and text with a NUL cannot be stored on a server at all.
 */
function pgUpsertText(type: string, at: string, tally: DurationTally): string | null {
  const rows: string[] = [];
  const states = [...tally.byState].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [state, s] of states) {
    const v = [sqlLiteral(state), sqlLiteral(s.count), sqlLiteral(s.sumMs), sqlLiteral(s.sumSqMs), sqlLiteral(s.minMs), sqlLiteral(s.maxMs)];
    if (v.some((x) => x === null)) continue;
    const [st, count, sum, sumsq, min, max] = v;
    rows.push(`(${st}::text, ${count}::bigint, ${sum}::float8, ${sumsq}::float8, ${min}::float8, ${max}::float8)`);
  }
  const t = sqlLiteral(type);
  const a = sqlLiteral(at);
  return t === null || a === null || rows.length === 0 ? null : PG_UPSERT(t, a, rows.join(', '));
}

/**
 * Add a batch of samples, inside the batch's transaction: on a file one upsert per state, now; on
 * a server one in all, with the commit.
 */
export async function recordDurations(db: Db, type: string, tally: DurationTally): Promise<void> {
  if (tally.size === 0) return;
  if (db.backend === 'postgresql') {
    const text = pgUpsertText(type, now(db), tally);
    if (text !== null) await db.atCommit(text);
    return;
  }
  const stmt = sql(
    db,
    `INSERT INTO state_duration AS d (type, state, count, sum_ms, sumsq_ms, min_ms, max_ms, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (type, state) DO UPDATE SET count = d.count + excluded.count, sum_ms = d.sum_ms + excluded.sum_ms,
       sumsq_ms = d.sumsq_ms + excluded.sumsq_ms, min_ms = ${least(db, 'd.min_ms', 'excluded.min_ms')},
       max_ms = ${greatest(db, 'd.max_ms', 'excluded.max_ms')}, updated_at = excluded.updated_at`,
  );
  const at = now(db);
  for (const [state, s] of tally.byState) await stmt.run(type, state, s.count, s.sumMs, s.sumSqMs, s.minMs, s.maxMs, at);
}

/** The statistics kept for a type and config (durationKey), by state (empty when none, or in a file from before them). */
export async function durationStats(db: Db, type: string): Promise<Map<string, DurationStat>> {
  return toMap(
    await sql(db, 'SELECT state, count, sum_ms, sumsq_ms, min_ms, max_ms FROM state_duration WHERE type = $1').all(type) as StatRow[],
  );
}

/** The durations of this strategy's operations that ended well, by state, from its history. */
export async function observedDurations(db: Db): Promise<Map<string, DurationStat>> {
  const rows = await sql(
    db,
    `SELECT state, count(*) AS count, coalesce(sum(d), 0) AS sum_ms, coalesce(sum(d * d), 0) AS sumsq_ms,
       min(d) AS min_ms, max(d) AS max_ms
     FROM (SELECT state, ${msBetween(db, 'started_at', 'finished_at')} AS d
           FROM step_history WHERE outcome = 'ok' AND finished_at IS NOT NULL) AS ok
     GROUP BY state`,
  ).all() as StatRow[];
  return toMap(rows);
}
