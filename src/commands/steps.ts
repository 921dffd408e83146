/** `dcm strategy-step list|show|history`: read-only views of the steps. */
import { OperationError, UsageError } from '../domain/errors.js';
import { findStep, listHistory, listStepColumns } from '../store/steps.js';
import { withReadDb, type Ctx } from './context.js';
import { historyList, HISTORY_COLUMNS, stepShow, STEP_COLUMNS } from './views.js';
import { list, type Result } from '../cli/output/result.js';
import { allStepStates, checkStepStates } from '../domain/choices.js';
import { statesOf, type StrategyType } from '../domain/types.js';
import { getStrategy, listStages } from '../store/strategy.js';

/**
 * The filter's values must name what exists (SPEC §4): a typo is an error listing the valid ones,
 * never an empty list. `--state`: the fixed set of step states first; only a value outside it
 * makes the strategy's own states (a type whose states come with the strategy) worth a look in the
 * file. `--stage`: a stage of the strategy, when there is one.
 */
export function checkStepFilter(ctx: Ctx, filter: { states?: string[]; stage?: number }): void {
  const states = filter.states;
  const odd = Boolean(states?.length) && !states!.every((s) => allStepStates().includes(s));
  if (filter.stage !== undefined && filter.stage < 1) {
    throw new UsageError(`invalid --stage ${filter.stage}: stages are numbered from 1`);
  }
  if (!odd && filter.stage === undefined) return;
  const found = withReadDb(ctx, null, (db) => {
    const s = getStrategy(db);
    if (!s) return null;
    return {
      states: statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null }) ?? [],
      stages: listStages(db).map((st) => st.stage),
    };
  });
  if (odd) checkStepStates(states, found?.states ?? []);
  if (filter.stage !== undefined && found && !found.stages.includes(filter.stage)) {
    const n = found.stages.length;
    throw new UsageError(`invalid --stage ${filter.stage}: the strategy has ${n === 1 ? 'stage 1 only' : `stages 1 to ${n}`}`);
  }
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
