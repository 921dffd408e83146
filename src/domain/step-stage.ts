/**
 * A step's `stage` as dcmanager's server sends it, and dcm's own stage number beside it.
 *
 * The server stores a number for where a step is in its own orchestration (created, started,
 * processed) and its API maps it through STAGE_MAP to a word, in the step list and in a single
 * step alike (sw_update_strategy.py, SwUpdateStrategyController.get). A step is created at the
 * first, moves to the second when its first state starts (OrchestratorWorker._apply), and to the
 * third once the worker sees it complete, failed or aborted (_delete_subcloud_worker): so a step
 * still `initial` is `Create`, an ended one `Complete` (an aborted step too: the worker processes
 * it like any ended one), and any other `Apply`.
 *
 * dcm's own stage is something else: the number of the group a step runs with (stage 1 runs
 * first), what `strategy-step list --stage N`, `strategy status` and `strategy update --stage N`
 * speak of. It has no place in dcmanager's columns, so it is a column of its own, `stage number`.
 */
import { STEP_ENDED, STEP_INITIAL } from './types.js';

export type DcmanagerStage = 'Create' | 'Apply' | 'Complete';

/** The column holding dcm's stage number, printed when `-c` names it (views.ts). */
export const STAGE_NUMBER_COLUMN = 'stage number';

/** The server's word for a step in this state. */
export function dcmanagerStage(state: string): DcmanagerStage {
  if (state === STEP_INITIAL) return 'Create';
  return STEP_ENDED.includes(state) ? 'Complete' : 'Apply';
}
