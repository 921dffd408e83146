/** `dcm strategy-step list|show|history`: read-only views of the steps. */
import { OperationError } from '../domain/errors.js';
import { findStep, listHistory, listStepColumns } from '../store/steps.js';
import { withReadDb, type Ctx } from './context.js';
import { historyList, HISTORY_COLUMNS, stepShow, STEP_COLUMNS } from './views.js';
import { list, type Result } from '../cli/output/result.js';
import { allStepStates, checkStepStates } from '../domain/choices.js';
import { statesOf, type StrategyType } from '../domain/types.js';
import { getStrategy } from '../store/strategy.js';

/**
 * `--state` values must be step states (SPEC §4): a typo is an error listing the valid ones, never
 * an empty list. The fixed set is checked first; only a value outside it makes the strategy's own
 * states (a type whose states come with the strategy) worth a look in the file. (`--stage N` of a
 * stage the strategy does not have lists nothing, as a filter that matches nothing does.)
 */
export function checkStepFilter(ctx: Ctx, filter: { states?: string[]; stage?: number }): void {
  const states = filter.states;
  if (!states?.length || states.every((s) => allStepStates().includes(s))) return;
  const own = withReadDb(ctx, [] as string[], (db) => {
    const s = getStrategy(db);
    return (s && statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null })) ?? [];
  });
  checkStepStates(states, own);
}

export async function stepList_(ctx: Ctx, filter: { states?: string[]; stage?: number }): Promise<Result> {
  checkStepFilter(ctx, filter);
  return withReadDb(ctx, list(STEP_COLUMNS, []), (db) => list(STEP_COLUMNS, listStepColumns(db, filter)));
}

export async function stepShow_(ctx: Ctx, cloud: string): Promise<Result> {
  const r = withReadDb(ctx, null, (db) => {
    const step = findStep(db, cloud);
    return step ? stepShow(step) : null;
  });
  if (!r) throw new OperationError(`Strategy step for subcloud ${cloud} not found`);
  return r;
}

export async function stepHistory(ctx: Ctx, cloud?: string): Promise<Result> {
  return withReadDb(ctx, list(HISTORY_COLUMNS, []), (db) => historyList(listHistory(db, cloud)));
}
