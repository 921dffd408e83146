/**
 * Queries of strategy_archive: the records `strategy delete` keeps (migrations.ts 15 -> 16). A
 * record is written once, whole, in the transaction that deletes the live strategy, and read whole
 * by `strategy report` and `strategy events --strategy ID`; only `db prune` removes it.
 */
import type { Db } from './open.js';
import { sql } from './statements.js';
import { now } from './clock.js';
import { deleteStrategy, type StrategyRow } from './strategy.js';
import { listSteps, type StepRow } from './steps.js';
import type { EventRow } from './events.js';
import type { RunRow } from './report.js';
import type { StageGateRow } from './stage-gates.js';
import { strategyIdOf } from '../domain/logs.js';

/** A stage as kept: its window, group, budget and gate (strategy_stage's columns). */
export type ArchivedStage = StageGateRow & { max_parallel: number };

/** What `strategy list` shows of a strategy, the current one or a kept one. */
export interface ArchiveSummary {
  id: string;
  type: string;
  state: string;
  steps: number;
  complete: number;
  failed: number;
  created_at: string;
  updated_at: string | null;
  /** null: the current strategy, not deleted. */
  deleted_at: string | null;
  deleted_by: string | null;
}

/** A kept record, whole: the rows the live strategy's readers read, as they were at delete. */
export interface ArchivedStrategy extends ArchiveSummary {
  strategy: StrategyRow;
  stages: ArchivedStage[];
  steps_rows: StepRow[];
  runs: RunRow[];
  events: EventRow[];
}

const SUMMARY = 'id, type, state, steps, complete, failed, created_at, updated_at, deleted_at, deleted_by';

/**
 * Copy the live strategy into the archive and delete it, in the caller's transaction (the caller
 * has checked that it may be deleted and recorded its `deleted` event, which is kept with it).
 * Returns the kept record's id, or null when there was no strategy.
 */
export async function archiveStrategy(db: Db, deletedBy: string): Promise<string | null> {
  const row = await sql(db, 'SELECT * FROM strategy WHERE id = 1').get() as StrategyRow | undefined;
  if (!row) return null;
  const stages = await sql(
    db,
    `SELECT stage, max_parallel, group_name, max_failures, gate, gate_check, gate_state, gate_reason, gate_at, gate_due_at
     FROM strategy_stage ORDER BY stage`,
  ).all() as ArchivedStage[];
  const steps = await listSteps(db);
  const runs = await sql(
    db,
    'SELECT step_id, state, attempt, started_at, finished_at, outcome, details FROM step_history ORDER BY id',
  ).all() as RunRow[];
  const events = await sql(db, 'SELECT at, event, "user", host, pid, details, reason FROM strategy_event ORDER BY id').all() as EventRow[];
  const id = strategyIdOf(row.created_at);
  await sql(
    db,
    `INSERT INTO strategy_archive (id, type, state, steps, complete, failed, created_at, updated_at, deleted_at, deleted_by,
       strategy_json, stages_json, steps_json, runs_json, events_json)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
  ).run(
    id,
    row.type,
    row.state,
    steps.length,
    steps.filter((s) => s.state === 'complete').length,
    steps.filter((s) => s.state === 'failed').length,
    row.created_at,
    row.updated_at,
    now(db),
    deletedBy,
    JSON.stringify(row),
    JSON.stringify(stages),
    JSON.stringify(steps),
    JSON.stringify(runs),
    JSON.stringify(events),
  );
  await deleteStrategy(db);
  return id;
}

/** The live strategy's steps as a list line counts them. */
export async function stepCounts(db: Db): Promise<{ steps: number; complete: number; failed: number }> {
  return (await sql(
    db,
    `SELECT count(*) AS steps, coalesce(sum(CASE WHEN state = 'complete' THEN 1 ELSE 0 END), 0) AS complete,
       coalesce(sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) AS failed FROM strategy_step`,
  ).get()) as { steps: number; complete: number; failed: number };
}

/** The kept strategies, oldest first (by when each was created). */
export async function listArchived(db: Db): Promise<ArchiveSummary[]> {
  return (await sql(db, `SELECT ${SUMMARY} FROM strategy_archive ORDER BY created_at, id`).all()) as ArchiveSummary[];
}

/** One kept record, whole, or undefined. */
export async function getArchived(db: Db, id: string): Promise<ArchivedStrategy | undefined> {
  const r = await sql(db, `SELECT ${SUMMARY}, strategy_json, stages_json, steps_json, runs_json, events_json FROM strategy_archive WHERE id = $1`).get(id) as
    | (ArchiveSummary & Record<'strategy_json' | 'stages_json' | 'steps_json' | 'runs_json' | 'events_json', string>)
    | undefined;
  if (!r) return undefined;
  const { strategy_json, stages_json, steps_json, runs_json, events_json, ...summary } = r;
  return {
    ...summary,
    strategy: JSON.parse(strategy_json) as StrategyRow,
    stages: JSON.parse(stages_json) as ArchivedStage[],
    steps_rows: JSON.parse(steps_json) as StepRow[],
    runs: JSON.parse(runs_json) as RunRow[],
    events: JSON.parse(events_json) as EventRow[],
  };
}

/** A kept record's events only (`strategy events --strategy ID`): the rest is not parsed. */
export async function archivedEvents(db: Db, id: string): Promise<{ type: string; events: EventRow[] } | undefined> {
  const r = await sql(db, 'SELECT type, events_json FROM strategy_archive WHERE id = $1').get(id) as { type: string; events_json: string } | undefined;
  return r && { type: r.type, events: JSON.parse(r.events_json) as EventRow[] };
}

/** The kept records deleted before `cutoff` (a time as the store writes them), oldest first. */
export async function archivedBefore(db: Db, cutoff: string): Promise<(ArchiveSummary & { extra: Record<string, unknown> })[]> {
  const rows = await sql(db, `SELECT ${SUMMARY}, strategy_json FROM strategy_archive WHERE deleted_at < $1 ORDER BY deleted_at, id`).all(cutoff) as (ArchiveSummary & {
    strategy_json: string;
  })[];
  // Its options say where its run logs are (domain/logs.ts layoutOf).
  return rows.map(({ strategy_json, ...r }) => ({ ...r, extra: JSON.parse((JSON.parse(strategy_json) as StrategyRow).extra_args) as Record<string, unknown> }));
}

/** Remove these kept records; returns how many went. */
export async function removeArchived(db: Db, ids: readonly string[]): Promise<number> {
  const stmt = sql(db, 'DELETE FROM strategy_archive WHERE id = $1');
  let n = 0;
  for (const id of ids) n += (await stmt.run(id)).changes;
  return n;
}

/** The strategy deleted last, or undefined when none is kept. */
export async function lastArchived(db: Db): Promise<ArchiveSummary | undefined> {
  return (await sql(db, `SELECT ${SUMMARY} FROM strategy_archive ORDER BY deleted_at DESC, id DESC LIMIT 1`).get()) as ArchiveSummary | undefined;
}
