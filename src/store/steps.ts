/** Queries of the strategy_step and step_history tables for readers and create. */
import type { Db } from './open.js';
import { Params, sql } from './statements.js';
import { now } from './clock.js';
import type { PlannedStep } from '../domain/planning.js';

/**
 * A run of unknown outcome (README "Several hosts"): its host is gone without saying how it ended,
 * and its state has no timeout, so it may be going still, for ever. Its history row stays
 * `running` (it holds its step and its window slot) and says so after this prefix, until the
 * operator says how it ended (`strategy-step resolve`) or runs it again (`strategy retry`);
 * store/runs.ts marks it.
 */
export const UNKNOWN_PREFIX = 'unknown: ';

export interface StepRow {
  id: number;
  subcloud_id: number;
  cloud: string;
  stage: number;
  state: string;
  details: string;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
  updated_at: string | null;
  attempt: number;
}

export interface HistoryRow {
  cloud: string;
  state: string;
  attempt: number;
  started_at: string;
  finished_at: string | null;
  outcome: string;
  details: string;
}

export async function insertSteps(db: Db, steps: readonly PlannedStep[]): Promise<void> {
  const stmt = sql(
    db,
    `INSERT INTO strategy_step (strategy_id, subcloud_id, stage, state, created_at) VALUES (1, $1, $2, 'initial', $3)`,
  );
  const created = now(db);
  for (const s of steps) await stmt.run(s.subcloudId, s.stage, created);
}

const SELECT_STEPS = `SELECT st.id, st.subcloud_id, sc.name AS cloud, st.stage, st.state, st.details, st.started_at,
  st.finished_at, st.created_at, st.updated_at, st.attempt
  FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id`;

export interface StepFilter {
  states?: string[];
  stage?: number;
}

/** `--state S`… and `--stage N` as an SQL condition over `strategy_step st`. */
function stepFilter(filter: StepFilter): { where: string; args: unknown[] } {
  const conds: string[] = [];
  const p = new Params();
  if (filter.states && filter.states.length) conds.push(`st.state IN (${p.list(filter.states)})`);
  if (filter.stage !== undefined) conds.push(`st.stage = ${p.add(filter.stage)}`);
  return { where: conds.length ? `WHERE ${conds.join(' AND ')}` : '', args: p.values };
}

/** Steps in step order (stage, then the order they were planned in). */
export async function listSteps(db: Db, filter: StepFilter = {}): Promise<StepRow[]> {
  const { where, args } = stepFilter(filter);
  const text = `${SELECT_STEPS} ${where} ORDER BY st.stage, st.id`;
  return (await sql(db, text).all(...args)) as StepRow[];
}

/**
 * The step list's columns only, as arrays (cloud, stage, state, details, started_at, finished_at):
 * a `watch` loop over thousands of steps should cost little more than the query.
 */
export async function listStepColumns(db: Db, filter: StepFilter = {}): Promise<(string | number | null)[][]> {
  return (await stepColumns(db, filter).all(...stepFilter(filter).args)) as (string | number | null)[][];
}

/** The same rows one at a time, for a list streamed to its output (commands/context readRows). */
export function iterateStepColumns(db: Db, filter: StepFilter = {}): AsyncIterableIterator<(string | number | null)[]> {
  return stepColumns(db, filter).iterate(...stepFilter(filter).args) as AsyncIterableIterator<(string | number | null)[]>;
}

function stepColumns(db: Db, filter: StepFilter) {
  const text = `SELECT sc.name, st.stage, st.state, st.details, st.started_at, st.finished_at
    FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id
    ${stepFilter(filter).where} ORDER BY st.stage, st.id`;
  return sql(db, text).raw(true);
}

export async function findStep(db: Db, cloud: string): Promise<StepRow | undefined> {
  return (await sql(db, `${SELECT_STEPS} WHERE sc.name = $1`).get(cloud)) as StepRow | undefined;
}

/** History rows in the order the operations started; a run of unknown outcome (store/runs.ts) says `unknown`. */
export async function listHistory(db: Db, cloud?: string): Promise<HistoryRow[]> {
  const outcome = `CASE WHEN h.outcome = 'running' AND h.details LIKE '${UNKNOWN_PREFIX}%' THEN 'unknown' ELSE h.outcome END`;
  const base = `SELECT sc.name AS cloud, h.state, h.attempt, h.started_at, h.finished_at, ${outcome} AS outcome, h.details
    FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id`;
  if (cloud === undefined) return (await sql(db, `${base} ORDER BY h.id`).all()) as HistoryRow[];
  return (await sql(db, `${base} WHERE sc.name = $1 ORDER BY h.id`).all(cloud)) as HistoryRow[];
}

/** The state each named cloud's step is in; clouds without a step are missing from the map. */
export async function stepStatesOf(db: Db, clouds: readonly string[]): Promise<Map<string, string>> {
  const stmt = sql(db, 'SELECT st.state FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE sc.name = $1').pluck();
  const out = new Map<string, string>();
  for (const c of clouds) {
    const state = await stmt.get(c) as string | undefined;
    if (state !== undefined) out.set(c, state);
  }
  return out;
}

/**
 * Failed and aborted steps (of the named clouds only, when given) with the state of their last
 * run, for `strategy retry`.
 */
export async function retryCandidates(db: Db, clouds: readonly string[] | null): Promise<{ id: number; cloud: string; state: string; lastRunState: string | null }[]> {
  const text = `SELECT st.id, sc.name AS cloud, st.state,
      (SELECT h.state FROM step_history h WHERE h.step_id = st.id ORDER BY h.id DESC LIMIT 1) AS "lastRunState"
    FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id
    WHERE st.state IN ('failed', 'aborted')`;
  const rows = await sql(db, `${text} ORDER BY st.stage, st.id`).all() as { id: number; cloud: string; state: string; lastRunState: string | null }[];
  if (!clouds) return rows;
  const wanted = new Set(clouds);
  return rows.filter((r) => wanted.has(r.cloud));
}

/**
 * A step goes back to `to` for the next run (`strategy retry`): not ended, no details, and nobody's
 * (several hosts): the worker that ended it is gone, and a later worker given its id (a file's
 * worker ids can be used again) must not take the step for one it holds in flight. Its started_at
 * stays (the first time it started); the history keeps every earlier run.
 */
export async function resetStep(db: Db, id: number, from: string, to: string): Promise<boolean> {
  return (await sql(db, `UPDATE strategy_step SET state = $1, details = '', finished_at = NULL, updated_at = $2, owner = NULL WHERE id = $3 AND state = $4`)
    .run(to, now(db), id, from)).changes === 1;
}
