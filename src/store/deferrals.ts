/**
 * The store's side of deferred steps (domain/deferral.ts): a deferred step's last run says which
 * state it is tried again in and when (its `retry_at`), so a later apply (after a kill -9) goes on
 * from the file, neither forgetting the step nor trying it before its time.
 */
import type { Db } from './open.js';
import { parseTime } from './clock.js';
import { abortStepsIn } from './transitions.js';

/** What a deferred step's history says: the state to run again, when, and how often it was deferred. */
export interface DeferredRun {
  state: string;
  dueMs: number | null;
  deferrals: number;
}

/** A history row closed by a deferral has details starting so (how they are counted). */
export const DEFERRED_RUN_PREFIX = 'deferred: ';

export async function deferredRun(db: Db, stepId: number): Promise<DeferredRun | null> {
  const last = await db
    .prepare(`SELECT state, retry_at AS "retryAt" FROM step_history WHERE step_id = $1 ORDER BY id DESC LIMIT 1`)
    .get(stepId) as { state: string; retryAt: string | null } | undefined;
  if (!last) return null;
  return { state: last.state, dueMs: last.retryAt === null ? null : parseTime(last.retryAt), deferrals: await deferralsOf(db, stepId) };
}

/** How often the step was deferred so far (in this strategy's history). */
export async function deferralsOf(db: Db, stepId: number): Promise<number> {
  return (await db
    .prepare(`SELECT count(*) FROM step_history WHERE step_id = $1 AND outcome = 'failed' AND details LIKE $2 || '%'`)
    .pluck()
    .get(stepId, DEFERRED_RUN_PREFIX)) as number;
}

/** Whether the stage has a step, other than `stepId`, still to run or running (not ended, not deferred). */
export async function othersLeftInStage(db: Db, stage: number, stepId: number): Promise<boolean> {
  return (
    (await db
      .prepare(
        `SELECT 1 FROM strategy_step WHERE stage = $1 AND id <> $2 AND state NOT IN ('complete', 'failed', 'aborted', 'deferred') LIMIT 1`,
      )
      .get(stage, stepId)) !== undefined
  );
}

/** The abort's write for deferred steps: they end `aborted` (they hold no slot and run nothing). */
export const abortDeferredSteps = (db: Db): Promise<number> => abortStepsIn(db, 'deferred', 'aborted while deferred (the site had not answered)');
