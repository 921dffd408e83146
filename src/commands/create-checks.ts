/**
 * Pieces of `strategy create` (commands/strategy.ts) apart from its flow: the checks of what apply
 * will use, the audit options, and what create says of the subclouds it left out, also when it
 * left out every one (issue 49: `Strategy has no steps to apply` used to say nothing of why).
 */
import { OperationError, UsageError } from '../domain/errors.js';
import type { ExtraArgs, RawDriverOptions } from '../domain/options.js';
import { logNameProblem } from '../domain/logs.js';
import { quoteName, type LabelSelector } from '../domain/inventory.js';
import { describeNoSteps, type LeftOutContext } from '../domain/left-out.js';
import { NoStepsError } from '../domain/planning.js';
import { TYPES, type StrategyType } from '../domain/types.js';

/** Each subcloud gets a log folder named after it: refused here rather than at each step's first run. */
export function checkLogFolders(clouds: readonly string[]): void {
  for (const cloud of clouds) {
    const problem = logNameProblem('cloud', cloud);
    if (problem) throw new OperationError(`subcloud ${quoteName(cloud)} cannot be run by the exec driver: ${problem}`);
  }
}

/**
 * Whether apply audits each site after its last state (`audit_after`), and whether a site that
 * disagrees fails its step (`require_audit`): stored with the strategy, as its driver's options
 * are. An exec config audits when it has `audit`; the sim with `--sim-audit` or `--require-audit`.
 */
export function auditExtraArgs(driverName: string, driver: ExtraArgs, raw: RawDriverOptions, requireAudit: boolean, disagreesOk = false): ExtraArgs {
  const hasAudit =
    driverName === 'exec'
      ? (JSON.parse(String(driver.exec_config)) as { audit?: unknown }).audit !== undefined
      : Boolean((raw as { simAudit?: boolean }).simAudit) || requireAudit;
  if (requireAudit && !hasAudit) throw new UsageError('--require-audit needs an audit: add "audit" to the exec config');
  // Three ways to hear a site's audit that disagrees: complete and exit 5 (the default), complete
  // and exit 0 (--audit-disagrees-ok), or the step failed (--require-audit).
  if (disagreesOk && requireAudit) throw new UsageError('--audit-disagrees-ok and --require-audit exclude each other: a disagreeing audit either fails its step or does not');
  if (disagreesOk && !hasAudit) throw new UsageError(`--audit-disagrees-ok needs an audit: ${driverName === 'exec' ? 'add "audit" to the exec config' : 'give --sim-audit'}`);
  return hasAudit ? { audit_after: true, require_audit: requireAudit, ...(disagreesOk ? { audit_disagrees_ok: true } : {}) } : {};
}

/** How `--group` and `--label` narrowed the fleet, in the left-out warning's words. */
export function selectionText(group: string | null, labels: LabelSelector | null): string | null {
  const parts: string[] = [];
  if (group !== null) parts.push(`group ${group}`);
  if (labels) parts.push(`--label ${Object.entries(labels).map(([k, v]) => `${k}=${v ?? ''}`).join(' --label ')}`);
  return parts.length ? parts.join(' with ') : null;
}

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
