/**
 * Queries of the stage gates (README "Stage gates"): each stage's budget, gate and the gate's
 * outcome (columns of strategy_stage), and each group's defaults (subcloud_group_gate).
 */
import { visible } from '../domain/outside-text.js';
import type { Db } from './open.js';
import { sql } from './statements.js';
import { now } from './clock.js';
import type { GateState } from '../domain/stage-gates.js';

export interface StageGateRow {
  stage: number;
  group_name: string | null;
  max_failures: string | null;
  gate: string;
  gate_check: string | null;
  gate_state: GateState | null;
  gate_reason: string | null;
  gate_at: string | null;
  gate_due_at: string | null;
}

export async function listStageGates(db: Db): Promise<StageGateRow[]> {
  return (await sql(
    db,
    `SELECT stage, group_name, max_failures, gate, gate_check, gate_state, gate_reason, gate_at, gate_due_at
     FROM strategy_stage ORDER BY stage`,
  ).all()) as StageGateRow[];
}

export async function stageGate(db: Db, stage: number): Promise<StageGateRow | undefined> {
  return (await listStageGates(db)).find((r) => r.stage === stage);
}

/**
 * At create, once the stages are in: each stage's budget and gate are the create's when given,
 * else its group's defaults (a stage of named subclouds has no group: none), else none.
 */
export async function fillStageGates(db: Db, o: { maxFailures: string | null; gate: string | null; gateCheck: string | null }): Promise<void> {
  await sql(
    db,
    `UPDATE strategy_stage SET
       max_failures = coalesce($1, (SELECT d.max_failures FROM subcloud_group_gate d JOIN subcloud_group g ON g.id = d.group_id WHERE g.name = strategy_stage.group_name)),
       gate = coalesce($2, (SELECT d.gate FROM subcloud_group_gate d JOIN subcloud_group g ON g.id = d.group_id WHERE g.name = strategy_stage.group_name), 'none'),
       gate_check = $3`,
  ).run(o.maxFailures, o.gate, o.gateCheck);
}

/** `strategy update`: these stages' budget, gate or check command (a value not given is kept). */
export async function setStageGates(db: Db, stages: readonly number[], o: { maxFailures?: string; gate?: string; gateCheck?: string }): Promise<void> {
  const stmt = sql(
    db,
    `UPDATE strategy_stage SET max_failures = coalesce($1, max_failures), gate = coalesce($2, gate), gate_check = coalesce($3, gate_check) WHERE stage = $4`,
  );
  for (const st of stages) await stmt.run(o.maxFailures ?? null, o.gate ?? null, o.gateCheck ?? null, st);
}

/** The gate's outcome as it goes (the orchestrator's write, in its fenced transaction). */
export async function setGateState(db: Db, stage: number, state: GateState, reason: string | null, dueAt: string | null = null): Promise<void> {
  // The reason may quote a check's output: kept escaped (domain/outside-text.ts), as events are.
  const kept = reason === null ? null : visible(reason, 4000);
  await sql(db, 'UPDATE strategy_stage SET gate_state = $1, gate_reason = $2, gate_at = $3, gate_due_at = $4 WHERE stage = $5').run(state, kept, now(db), dueAt, stage);
}

/** A stage's steps: how many, failed, not started, and when the last one ended. */
export async function stageTally(db: Db, stage: number): Promise<{ total: number; failed: number; initial: number; lastEnd: string | null }> {
  return (await sql(
    db,
    `SELECT count(*) AS total, coalesce(sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) AS failed, coalesce(sum(CASE WHEN state = 'initial' THEN 1 ELSE 0 END), 0) AS initial,
       max(finished_at) AS "lastEnd"
     FROM strategy_step WHERE stage = $1`,
  ).get(stage)) as { total: number; failed: number; initial: number; lastEnd: string | null };
}

/** The stages that have steps, in order (a stage without any has no gate to go through). */
export async function stagesWithSteps(db: Db): Promise<number[]> {
  return (await sql(db, 'SELECT DISTINCT stage FROM strategy_step ORDER BY stage').pluck().all()) as number[];
}

/** The names of a stage's subclouds, in step order (the check's DCM_STAGE_CLOUDS). */
export async function stageCloudNames(db: Db, stage: number): Promise<string[]> {
  return (await sql(db, 'SELECT sc.name FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE st.stage = $1 ORDER BY st.id')
    .pluck()
    .all(stage)) as string[];
}

export interface GroupGateDefaults {
  max_failures: string | null;
  gate: string | null;
}

export async function groupGateDefaults(db: Db, groupId: number): Promise<GroupGateDefaults | undefined> {
  return (await sql(db, 'SELECT max_failures, gate FROM subcloud_group_gate WHERE group_id = $1').get(groupId)) as GroupGateDefaults | undefined;
}

/** `subcloud-group add|update --stage-max-failures --stage-gate`: a value not given is kept. */
export async function setGroupGateDefaults(db: Db, groupId: number, o: { maxFailures?: string; gate?: string }): Promise<void> {
  await sql(
    db,
    `INSERT INTO subcloud_group_gate AS g (group_id, max_failures, gate) VALUES ($1, $2, $3)
     ON CONFLICT (group_id) DO UPDATE SET max_failures = coalesce(excluded.max_failures, g.max_failures), gate = coalesce(excluded.gate, g.gate)`,
  ).run(groupId, o.maxFailures ?? null, o.gate ?? null);
}

/**
 * `strategy retry`: a stage it reopens (a step of it not ended again) goes through its gate again,
 * and its budget counts again, as for a stage that never ended.
 */
export async function reopenGates(db: Db): Promise<number> {
  return (await sql(
    db,
    `UPDATE strategy_stage SET gate_state = NULL, gate_reason = NULL, gate_at = NULL, gate_due_at = NULL
     WHERE gate_state IS NOT NULL
       AND stage IN (SELECT DISTINCT stage FROM strategy_step WHERE state NOT IN ('complete', 'failed', 'aborted'))`,
  ).run()).changes;
}
