/**
 * The parts of `strategy create` that check and shape its options on their own (before the file is
 * read: SPEC §5), apart from the create itself (commands/strategy.ts).
 */
import { OperationError, UsageError } from '../domain/errors.js';
import type { ExtraArgs, RawDriverOptions } from '../domain/options.js';
import { logNameProblem } from '../domain/logs.js';
import { quoteName, type LabelSelector } from '../domain/inventory.js';
import { TYPES } from '../domain/types.js';
import { formatStageGate, formatStageMaxFailures, parseStageGate, parseStageMaxFailures } from '../domain/stage-gates.js';
import { parseDeferDelay, parseDeferUntil } from '../domain/deferral.js';
import type { CreateInput } from './strategy.js';

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

/** `--target-version V`: a software version, for the types whose target is one. */
export function targetVersionOption(input: CreateInput): string | null {
  if (input.targetVersion === undefined) return null;
  const v = input.targetVersion.trim();
  if (v === '') throw new UsageError("option '--target-version' is empty: give a version");
  if (input.type !== 'patch' && input.type !== 'sw-deploy') {
    throw new UsageError(`--target-version applies to patch and sw-deploy (a subcloud's software_version), not ${input.type}${TYPES[input.type].forceAllowed ? ': --force takes in-sync subclouds' : ''}`);
  }
  return v;
}

export const NO_CHECK = '--stage-gate check needs a command: --gate-check CMD, or gate_check in the exec config';

/** The stage gate options, checked on their own (before the file is read) and as they are stored. */
export function stageGateOptions(input: CreateInput): { maxFailures: string | null; gate: string | null; gateCheck: string | null } {
  if (input.gateCheck !== undefined && input.gateCheck.trim() === '') throw new UsageError("option '--gate-check' is empty: give a command");
  return {
    maxFailures: input.stageMaxFailures === undefined ? null : formatStageMaxFailures(parseStageMaxFailures(input.stageMaxFailures)),
    gate: input.stageGate === undefined ? null : formatStageGate(parseStageGate(input.stageGate)),
    gateCheck: input.gateCheck ?? null,
  };
}

/** The exec config's `gate_check`, from the config as stored (JSON); null for the sim driver. */
export function configGateCheck(stored: unknown): string | null {
  if (typeof stored !== 'string') return null;
  const check = (JSON.parse(stored) as { gate_check?: unknown }).gate_check;
  return typeof check === 'string' ? check : null;
}

/** `--defer-delay`, `--defer-until` as stored with the strategy (its extra args); checked as usage. */
export function deferExtraArgs(input: CreateInput): ExtraArgs {
  const out: ExtraArgs = {};
  if (input.deferDelay !== undefined) out.defer_delay_ms = parseDeferDelay(input.deferDelay);
  if (input.deferUntil !== undefined) {
    parseDeferUntil(input.deferUntil);
    out.defer_until = input.deferUntil.trim();
  }
  return out;
}
