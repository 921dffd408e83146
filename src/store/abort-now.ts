/**
 * `strategy abort --now` with no orchestrator running: the runs it stopped are closed as
 * `interrupted` and their steps `aborted`, each saying who stopped it and why (the same words a
 * running orchestrator records for the runs it stops, orchestrator/decide.ts).
 */
import type { Db } from './open.js';
import { now } from './clock.js';
import { recordText } from './transitions.js';

/** Close each run (only while still `running`) and abort its step (only while still in that run's state). */
export async function abortStoppedRuns(db: Db, runs: readonly { historyId: number; stepId: number; state: string }[], text: string): Promise<number> {
  const at = now(db);
  const close = db.prepare(`UPDATE step_history SET outcome = 'interrupted', finished_at = $1, details = $2 WHERE id = $3 AND outcome = 'running'`);
  const step = db.prepare(`UPDATE strategy_step SET state = 'aborted', details = $1, finished_at = $2, updated_at = $3 WHERE id = $4 AND state = $5`);
  let n = 0;
  for (const r of runs) {
    if ((await close.run(at, recordText(text), r.historyId)).changes === 1) {
      n += (await step.run(recordText(`${r.state}: ${text}`), at, at, r.stepId, r.state)).changes;
    }
  }
  return n;
}

/**
 * `strategy-step resolve` on a file: the operator's word as the end of a run left `running` whose
 * processes are gone and left no status. The run closes (`ok` or `failed`) and the step moves as
 * the orchestrator would have moved it: on to `to` (not started: the next apply starts it), to
 * `complete` (its endpoint in-sync), or `failed`. Guarded: only while the run is still `running`
 * and the step still in its state. True: written.
 */
export async function resolveLeftRun(
  db: Db,
  r: { historyId: number; stepId: number; subcloudId: number; state: string },
  end: { outcome: 'ok' | 'failed'; runDetails: string; to: string; stepDetails: string; completes: string | null },
): Promise<boolean> {
  const at = now(db);
  const closed = await db
    .prepare(`UPDATE step_history SET outcome = $1, finished_at = $2, details = $3 WHERE id = $4 AND outcome = 'running'`)
    .run(end.outcome, at, recordText(end.runDetails), r.historyId);
  if (closed.changes !== 1) return false;
  const ended = ['complete', 'failed'].includes(end.to);
  const moved = await db
    .prepare(`UPDATE strategy_step SET state = $1, details = $2, finished_at = $3, updated_at = $4 WHERE id = $5 AND state = $6`)
    .run(end.to, recordText(end.stepDetails), ended ? at : null, at, r.stepId, r.state);
  if (moved.changes !== 1) throw new Error(`the step moved on while its run was resolved`);
  if (end.completes !== null) await db.prepare(`UPDATE subcloud SET ${end.completes}, updated_at = $1 WHERE id = $2`).run(at, r.subcloudId);
  return true;
}
