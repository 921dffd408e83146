/** `dcm strategy-step list|show|history`: read-only views of the steps. */
import { OperationError } from '../domain/errors.js';
import { findStep, iterateStepColumns, listHistory } from '../store/steps.js';
import { readRows, withReadDb, type Ctx } from './context.js';
import type { CommandResult, StepLine } from './results.js';
import { allStepStates, checkStepStates } from '../domain/choices.js';
import { statesOf, type StrategyType } from '../domain/types.js';
import { getStrategy } from '../store/strategy.js';
import { findSubcloud, subcloudNameOf } from '../store/subclouds.js';

/**
 * `--state` values must be step states (SPEC §4): a typo is an error listing the valid ones, never
 * an empty list. The fixed set is checked first; only a value outside it makes the strategy's own
 * states (a type whose states come with the strategy) worth a look in the file. (`--stage N` of a
 * stage the strategy does not have lists nothing, as a filter that matches nothing does.)
 */
export async function checkStepFilter(ctx: Ctx, filter: { states?: string[]; stage?: number }): Promise<void> {
  const states = filter.states;
  if (!states?.length || states.every((s) => allStepStates().includes(s))) return;
  const own = await withReadDb(ctx, [] as string[], async (db) => {
    const s = await getStrategy(db);
    return (s && statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null })) ?? [];
  });
  checkStepStates(states, own);
}

export async function stepList_(ctx: Ctx, filter: { states?: string[]; stage?: number }): Promise<CommandResult> {
  await checkStepFilter(ctx, filter);
  return { kind: 'steps', rows: readRows(ctx, (db) => iterateStepColumns(db, filter) as AsyncIterableIterator<StepLine>) };
}

export async function stepShow_(ctx: Ctx, cloud: string): Promise<CommandResult> {
  const row = await withReadDb(ctx, null, async (db) => await findStep(db, await subcloudNameOf(db, cloud)) ?? null);
  if (!row) throw new OperationError(`Strategy step for subcloud ${cloud} not found`);
  return { kind: 'step', row };
}

/** A subcloud named that does not exist is an error, as for `strategy-step logs` (not an empty list). */
export async function stepHistory(ctx: Ctx, cloud?: string): Promise<CommandResult> {
  const rows = await withReadDb(ctx, null, async (db) => {
    if (cloud === undefined) return await listHistory(db, undefined);
    // A subcloud named by its id, as dcmanager's API takes it; one that does not exist is an error.
    const name = await subcloudNameOf(db, cloud);
    return (await findSubcloud(db, name)) ? await listHistory(db, name) : null;
  });
  if (rows === null && cloud !== undefined) throw new OperationError(`Subcloud ${cloud} does not exist`);
  return { kind: 'history', rows: rows ?? [] };
}
