/** `dcm strategy-step list|show|history`: read-only views of the steps. */
import { OperationError } from '../domain/errors.js';
import { findStep, listHistory, listStepColumns } from '../store/steps.js';
import { withReadDb, type Ctx } from './context.js';
import type { CommandResult, StepLine } from './results.js';

export async function stepList_(ctx: Ctx, filter: { states?: string[]; stage?: number }): Promise<CommandResult> {
  return { kind: 'steps', rows: withReadDb(ctx, [], (db) => listStepColumns(db, filter) as StepLine[]) };
}

export async function stepShow_(ctx: Ctx, cloud: string): Promise<CommandResult> {
  const row = withReadDb(ctx, null, (db) => findStep(db, cloud) ?? null);
  if (!row) throw new OperationError(`Strategy step for subcloud ${cloud} not found`);
  return { kind: 'step', row };
}

export async function stepHistory(ctx: Ctx, cloud?: string): Promise<CommandResult> {
  return { kind: 'history', rows: withReadDb(ctx, [], (db) => listHistory(db, cloud)) };
}
