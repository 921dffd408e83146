/**
 * Read-only queries behind `strategy status` and apply's closing summary: steps per stage and
 * state, the operations running now, the failures. Each is one short `.all()`/`.get()`, so a
 * reader in a watch loop never holds a read transaction open.
 */
import type { Db } from './open.js';
import { Params, sql } from './statements.js';

export interface StageStateCount {
  stage: number;
  state: string;
  n: number;
}

export async function stageStateCounts(db: Db): Promise<StageStateCount[]> {
  return (await sql(db, 'SELECT stage, state, count(*) AS n FROM strategy_step GROUP BY stage, state ORDER BY stage').all()) as StageStateCount[];
}

export interface RunningOp {
  cloud: string;
  stage: number;
  state: string;
  started_at: string;
}

/** The operations running now (their history row is `running`), with the step's stage. */
export async function runningOps(db: Db): Promise<RunningOp[]> {
  return (await sql(
    db,
    `SELECT sc.name AS cloud, st.stage, h.state, h.started_at
     FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id
     WHERE h.outcome = 'running'`,
  ).all()) as RunningOp[];
}

/**
 * The latest `limit` details of steps whose run is in flight (a run's progress line: a run's step
 * has empty details otherwise), newest last.
 */
export async function latestProgress(db: Db, limit: number): Promise<{ cloud: string; details: string }[]> {
  const rows = await sql(
    db,
    `SELECT sc.name AS cloud, st.details
     FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id
     WHERE h.outcome = 'running' AND h.state = st.state AND st.details != ''
     ORDER BY st.updated_at DESC, st.id DESC LIMIT $1`,
  ).all(limit) as { cloud: string; details: string }[];
  return rows.reverse();
}

/** The first `limit` failed steps in the order they failed, and how many failed in all. */
export async function failedSteps(db: Db, limit: number): Promise<{ failures: { cloud: string; details: string }[]; failedTotal: number }> {
  const failures = await sql(
    db,
    `SELECT sc.name AS cloud, st.details FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id
     WHERE st.state = 'failed' ORDER BY st.finished_at, st.id LIMIT $1`,
  ).all(limit) as { cloud: string; details: string }[];
  const failedTotal =
    failures.length < limit
      ? failures.length
      : await sql(db, `SELECT count(*) FROM strategy_step WHERE state = 'failed'`).pluck().get() as number;
  return { failures, failedTotal };
}

/** The latest `limit` failed steps, newest last. */
export async function latestFailures(db: Db, limit: number): Promise<{ cloud: string; details: string }[]> {
  const rows = await sql(
    db,
    `SELECT sc.name AS cloud, st.details FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id
     WHERE st.state = 'failed' ORDER BY st.finished_at DESC, st.id DESC LIMIT $1`,
  ).all(limit) as { cloud: string; details: string }[];
  return rows.reverse();
}

/** When the strategy's first step started (its apply's start), or null before any did. */
export async function firstStartedAt(db: Db): Promise<string | null> {
  return (await sql(db, 'SELECT min(started_at) FROM strategy_step').pluck().get() as string | null) ?? null;
}

/** Steps not started (`initial`) of these groups' subclouds, by stage and group (maintenance windows). */
export async function initialStepsByStageGroup(db: Db, groupIds: readonly number[]): Promise<{ stage: number; group_id: number; n: number }[]> {
  if (groupIds.length === 0) return [];
  const p = new Params();
  return (await sql(
    db,
    `SELECT st.stage, sc.group_id, count(*) AS n FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id
     WHERE st.state = 'initial' AND sc.group_id IN (${p.list(groupIds)}) GROUP BY st.stage, sc.group_id`,
  ).all(...p.values)) as { stage: number; group_id: number; n: number }[];
}

export interface DeferredStep {
  cloud: string;
  state: string;
  attempt: number;
  retry_at: string | null;
}

/** The first `limit` deferred steps in step order, with the state and attempt of their last run and its next try. */
export async function deferredSteps(db: Db, limit: number): Promise<DeferredStep[]> {
  return (await sql(
    db,
    `SELECT sc.name AS cloud, h.state, h.attempt, h.retry_at FROM strategy_step st
       JOIN subcloud sc ON sc.id = st.subcloud_id
       JOIN step_history h ON h.id = (SELECT max(id) FROM step_history WHERE step_id = st.id)
     WHERE st.state = 'deferred' ORDER BY st.id LIMIT $1`,
  ).all(limit)) as DeferredStep[];
}

/** When the last of the deferred steps' next tries is due (ISO), or null with none deferred. */
export async function latestDeferredDue(db: Db): Promise<string | null> {
  return ((await sql(
    db,
    `SELECT max(h.retry_at) FROM strategy_step st JOIN step_history h ON h.id = (SELECT max(id) FROM step_history WHERE step_id = st.id)
     WHERE st.state = 'deferred'`,
  ).pluck().get()) as string | null) ?? null;
}
