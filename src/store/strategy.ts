/** Queries of the strategy and strategy_stage tables (at most one strategy, id 1). */
import type { Db } from './open.js';
import { Params, sql } from './statements.js';
import { now } from './clock.js';
import type { ExtraArgs } from '../domain/options.js';
import type { StagePlan } from '../domain/planning.js';

export interface StrategyRow {
  id: number;
  type: string;
  subcloud_apply_type: string | null;
  max_parallel_subclouds: number | null;
  stop_on_failure: number;
  /** `--max-failures` as given (`3`, `5%`), or null. */
  max_failures: string | null;
  state: string;
  extra_args: string;
  created_at: string;
  updated_at: string | null;
}

export interface Strategy extends Omit<StrategyRow, 'extra_args' | 'stop_on_failure'> {
  stop_on_failure: boolean;
  extra: ExtraArgs;
}

export async function getStrategy(db: Db): Promise<Strategy | undefined> {
  const row = await sql(db, 'SELECT * FROM strategy WHERE id = 1').get() as StrategyRow | undefined;
  if (!row) return undefined;
  const { extra_args, stop_on_failure, ...rest } = row;
  return { ...rest, stop_on_failure: stop_on_failure === 1, extra: JSON.parse(extra_args) as ExtraArgs };
}

export async function insertStrategy(
  db: Db,
  s: {
    type: string;
    subcloudApplyType: string | null;
    maxParallelSubclouds: number | null;
    stopOnFailure: boolean;
    maxFailures?: string | null;
    extra: ExtraArgs;
  },
  stages: readonly StagePlan[],
): Promise<void> {
  await sql(
    db,
    `INSERT INTO strategy (id, type, subcloud_apply_type, max_parallel_subclouds, stop_on_failure, state,
       extra_args, created_at, max_failures)
     VALUES (1, $1, $2, $3, $4, 'initial', $5, $6, $7)`,
  ).run(s.type, s.subcloudApplyType, s.maxParallelSubclouds, s.stopOnFailure ? 1 : 0, JSON.stringify(s.extra), now(db), s.maxFailures ?? null);
  await insertStages(db, stages);
}

/** The strategy's stages (a create that plans as it goes inserts them after its steps). */
export async function insertStages(db: Db, stages: readonly StagePlan[]): Promise<void> {
  const stmt = sql(db, 'INSERT INTO strategy_stage (stage, strategy_id, max_parallel, group_name) VALUES ($1, 1, $2, $3)');
  for (const st of stages) await stmt.run(st.stage, st.window, st.groupName);
}

export async function listStages(db: Db): Promise<{ stage: number; max_parallel: number; group_name: string | null; start_rate: string | null }[]> {
  return (await sql(db, 'SELECT stage, max_parallel, group_name, start_rate FROM strategy_stage ORDER BY stage').all()) as {
    stage: number;
    max_parallel: number;
    group_name: string | null;
    /** The stage's start rate as stored (domain/start-rate.ts), or null. */
    start_rate: string | null;
  }[];
}

/** Compare-and-swap of the strategy state: true when this writer made the change. */
export async function casStrategyState(db: Db, from: readonly string[], to: string): Promise<boolean> {
  const p = new Params(to, now(db));
  const r = await sql(db, `UPDATE strategy SET state = $1, updated_at = $2 WHERE id = 1 AND state IN (${p.list(from)})`).run(...p.values);
  return r.changes === 1;
}

export async function strategyState(db: Db): Promise<string | undefined> {
  return (await sql(db, 'SELECT state FROM strategy WHERE id = 1').pluck().get()) as string | undefined;
}

export async function deleteStrategy(db: Db): Promise<void> {
  // The starts and ends its runs' launchers wrote (several hosts), by the strategy's id in their run ids.
  const created = await sql(db, 'SELECT created_at FROM strategy WHERE id = 1').pluck().get() as string | undefined;
  if (created !== undefined) {
    // The strategy's id as run ids begin with it (domain/logs.ts strategyIdOf; not loaded here for lists).
    const runs = `${created.replace(/\D/g, '')}/%`;
    await sql(db, 'DELETE FROM run_claim WHERE run_id LIKE $1').run(runs);
    await sql(db, 'DELETE FROM run_end WHERE run_id LIKE $1').run(runs);
  }
  // Steps, stages and history go with it (ON DELETE CASCADE).
  await sql(db, 'DELETE FROM strategy WHERE id = 1').run();
}

/** The stages with their windows, and whether every step of each has ended (`strategy update`). */
export async function stageWindows(db: Db): Promise<{ stage: number; window: number; ended: boolean }[]> {
  const rows = await sql(
    db,
    `SELECT g.stage, g.max_parallel AS window,
       NOT EXISTS (SELECT 1 FROM strategy_step s WHERE s.stage = g.stage
                   AND s.state NOT IN ('complete', 'failed', 'aborted')) AS ended
     FROM strategy_stage g ORDER BY g.stage`,
  ).all() as { stage: number; window: number; ended: number }[];
  return rows.map((r) => ({ stage: r.stage, window: r.window, ended: r.ended === 1 }));
}

/** `strategy update`: the window of these stages; returns how many changed. */
export async function setStageWindows(db: Db, window: number, stages: readonly number[]): Promise<number> {
  const stmt = sql(db, 'UPDATE strategy_stage SET max_parallel = $1 WHERE stage = $2');
  let n = 0;
  for (const st of stages) n += (await stmt.run(window, st)).changes;
  return n;
}

/**
 * `strategy update` without `--stage`: the strategy's own max parallel subclouds, which its record
 * prints, becomes the window every stage still to run now has.
 */
export async function setStrategyMaxParallel(db: Db, window: number): Promise<void> {
  await sql(db, 'UPDATE strategy SET max_parallel_subclouds = $1 WHERE id = 1').run(window);
}

/** `strategy update --max-failures`: the budget as given. */
export async function setMaxFailures(db: Db, text: string): Promise<void> {
  await sql(db, 'UPDATE strategy SET max_failures = $1 WHERE id = 1').run(text);
}

/** The strategy was changed by a command (update): its updated_at says when. */
export async function touchStrategy(db: Db): Promise<void> {
  await sql(db, 'UPDATE strategy SET updated_at = $1 WHERE id = 1').run(now(db));
}

/** Whether anyone committed since the last look (SQLite's data_version; the PostgreSQL schema's commit counter). */
export async function dataVersion(db: Db): Promise<number> {
  return db.commitCount();
}

/**
 * What a running orchestrator re-reads when the file changed: state, windows, budget, start rates,
 * and the latest `strategy abort --now` of this abort (its event's id, none before the last retry),
 * read in the same statement.
 */
export async function controlSnapshot(
  db: Db,
  /** The names of the `abort now`, `retried` and `resumed` events (domain/events.ts CONTROL_EVENTS). */
  events: { now: string; retried: string; resumed: string },
): Promise<{ state: string; maxFailures: string | null; windows: Map<number, number>; rates: Map<number, string | null>; abortNow: number | null; resumed: number | null } | undefined> {
  const row = await sql(
    db,
    `SELECT state, max_failures,
       (SELECT max(e.id) FROM strategy_event e WHERE e.event = $1
          AND e.id > coalesce((SELECT max(r.id) FROM strategy_event r WHERE r.event = $2), 0)) AS abort_now,
       (SELECT max(e.id) FROM strategy_event e WHERE e.event = $3) AS resumed
     FROM strategy WHERE id = 1`,
  ).get(events.now, events.retried, events.resumed) as { state: string; max_failures: string | null; abort_now: number | string | null; resumed: number | string | null } | undefined;
  if (!row) return undefined;
  const stages = await listStages(db);
  return {
    state: row.state,
    maxFailures: row.max_failures,
    windows: new Map(stages.map((s) => [s.stage, s.max_parallel])),
    rates: new Map(stages.map((s) => [s.stage, s.start_rate])),
    resumed: row.resumed === null ? null : Number(row.resumed),
    abortNow: row.abort_now === null ? null : Number(row.abort_now),
  };
}
