/** `dcm strategy-step list|show|history`: read-only views of the steps. */
import { OperationError } from '../domain/errors.js';
import { findStep, listHistory, listStepColumns } from '../store/steps.js';
import { withReadDb, type Ctx } from './context.js';
import { historyList, HISTORY_COLUMNS, stepShow, STEP_COLUMNS } from './views.js';
import { list, type Result } from '../cli/output/result.js';

export async function stepList_(ctx: Ctx, filter: { states?: string[]; stage?: number }): Promise<Result> {
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
