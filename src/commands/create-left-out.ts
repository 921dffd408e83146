/**
 * What `strategy create` says of the subclouds it left out, also when it left out every one
 * (issue 49: `Strategy has no steps to apply` used to say nothing of why); its option checks are
 * in create-parts.ts.
 */
import { describeNoSteps, type LeftOutContext } from '../domain/left-out.js';
import { NoStepsError } from '../domain/planning.js';
import { TYPES, type StrategyType } from '../domain/types.js';

/** The words of the left-out warning for this create. */
export function leftOutContext(type: StrategyType, req: { targetVersion: string | null; force: boolean }, selection: string | null): LeftOutContext {
  return {
    endpoint: TYPES[type].endpoint,
    targetVersion: req.targetVersion,
    selection,
    forceAllowed: TYPES[type].forceAllowed,
    forceIgnored: req.force && !TYPES[type].forceAllowed,
    type,
  };
}

/** `plan()`, and when it plans no step, its error says first who was left out and how to plan by target. */
export function explainingNoSteps<T>(c: LeftOutContext, plan: () => T): T {
  try {
    return plan();
  } catch (err) {
    if (err instanceof NoStepsError && err.leftOut) err.warnings.push(describeNoSteps(err.leftOut, c));
    throw err;
  }
}
