/**
 * Operator control during a rollout (SPEC §4 "Control while applying"), the pure part: the failure
 * budget, which strategy states each control command accepts, what a retry does to a step, and
 * what a driver's report means for a step. No SQLite, no clock, no process.
 */
import type { AuditReport } from './audit.js';
import { formatDuration } from './durations.js';
import { EXIT, OperationError, UsageError } from './errors.js';

/** `--max-failures N|P%`: a count of failed steps, or a share of the strategy's steps. */
export type MaxFailures = { count: number } | { percent: number };

/** A failure budget as written, `3` or `5%` (also `2.5%`), before its option's bounds; null when neither. */
export function readFailureBudget(text: string): MaxFailures | null {
  const t = text.trim();
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(t);
  if (pct) return { percent: Number(pct[1]) };
  return /^\d+$/.test(t) && Number.isSafeInteger(Number(t)) ? { count: Number(t) } : null;
}

/** Parse `--max-failures`: 1 or more, or above 0% and at most 100%. Anything else is a usage error. */
export function parseMaxFailures(text: string): MaxFailures {
  const m = readFailureBudget(text);
  if (m && 'percent' in m) {
    if (m.percent > 0 && m.percent <= 100) return m;
    throw new UsageError(`invalid --max-failures '${text}': a percentage must be above 0% and at most 100%`);
  }
  if (m && m.count >= 1) return m;
  throw new UsageError(`invalid --max-failures '${text}': give a number of failed steps (1 or more) or a percentage (5%)`);
}

/** As it is stored and shown: `3` or `5%`. */
export function formatMaxFailures(m: MaxFailures): string {
  return 'count' in m ? String(m.count) : `${m.percent}%`;
}

/**
 * The number of failed steps at which no new subcloud starts, or null for no budget. A stored
 * budget wins; else `--stop-on-failure` is a budget of 1 (SPEC: it is `--max-failures 1`).
 * A percentage is of the strategy's steps, rounded up, and never below 1.
 */
export function failureLimit(stored: string | null, stopOnFailure: boolean, totalSteps: number): number | null {
  if (stored) {
    const m = parseMaxFailures(stored);
    if ('count' in m) return m.count;
    return Math.max(1, Math.ceil((m.percent * totalSteps) / 100 - 1e-9));
  }
  return stopOnFailure ? 1 : null;
}

/** The strategy states each control command accepts. */
export const PAUSABLE: readonly string[] = ['applying'];
export const RESUMABLE_BY_OPERATOR: readonly string[] = ['paused'];
export const UPDATABLE: readonly string[] = ['initial', 'applying', 'paused'];
export const RETRYABLE: readonly string[] = ['failed', 'aborted'];

/** A stage as `strategy update` sees it: its window, and whether every step of it has ended. */
export interface UpdatableStage {
  stage: number;
  window: number;
  ended: boolean;
}

/**
 * Which stages `strategy update --max-parallel-subclouds` rewrites. A stage that has ended keeps
 * the window it ran with, so the record (status, report) tells what really happened: naming it
 * with `--stage K` is refused; without `--stage`, every stage still to run (or running) changes
 * and the ended ones are listed in `kept`.
 */
export function stagesToResize(stages: readonly UpdatableStage[], stage?: number): { resize: number[]; kept: UpdatableStage[] } {
  if (stage !== undefined) {
    const st = stages.find((s) => s.stage === stage);
    if (st?.ended) throw new OperationError(`Stage ${stage} has ended and cannot be updated (it ran with window ${st.window})`);
    return { resize: st ? [stage] : [], kept: [] };
  }
  return { resize: stages.filter((s) => !s.ended).map((s) => s.stage), kept: stages.filter((s) => s.ended) };
}

/** What `strategy retry` does with a step, from its state and the state its failure names. */
export function retryTarget(
  step: { state: string; failedIn: string | null },
  kinds: { failed: boolean; aborted: boolean },
  states: readonly string[],
): string | null {
  if (step.state === 'failed' && kinds.failed) {
    // Back to the state it failed in; a failure whose state is unknown (or no longer of the
    // type) starts over.
    return step.failedIn && states.includes(step.failedIn) ? step.failedIn : 'initial';
  }
  if (step.state === 'aborted' && kinds.aborted) return 'initial';
  return null;
}

/** A driver's answer, or the orchestrator's own timeout. */
export type ReportResult = (
  | { kind: 'next'; next?: string; details?: string; audit?: AuditReport }
  | { kind: 'failed'; reason: string; timeout?: boolean; audit?: AuditReport }
  | { kind: 'retry'; reason: string; outcome: 'failed' | 'timeout' | 'interrupted'; delayMs: number }
  /** The site did not answer (exit 75): tried again later, or failed unreachable (domain/deferral.ts). */
  | { kind: 'defer'; reason: string }
  | { kind: 'timeout' }
) & {
  /** When the run ended, when its answer came later (an adopted run that ended while no dcm ran). */
  endedAtMs?: number;
};

/** What a report means for the step that ran `state`. */
export type Decision =
  | { kind: 'advance'; to: string; details: string; ended: boolean }
  | { kind: 'fail'; details: string; reason: string; outcome: 'failed' | 'timeout' }
  /** The same state runs again, as a new attempt, after `delayMs` (a driver's own retry). */
  | { kind: 'again'; details: string; reason: string; outcome: 'failed' | 'timeout' | 'interrupted'; delayMs: number }
  /** The site did not answer: the orchestrator's deferrals decide when, or whether, it is tried again. */
  | { kind: 'defer'; reason: string };

/**
 * Decide what a report means (SPEC §3, §6): the next state (the type's next one, or the one the
 * driver named if it is later, or `complete`), or a failure. A driver may never go back or name a
 * state the type does not have: that would run a state twice or out of order.
 */
export function decideReport(
  state: string,
  states: readonly string[],
  result: ReportResult,
  timeoutMs: number,
): Decision {
  const index = states.indexOf(state);
  if (result.kind === 'defer') return { kind: 'defer', reason: result.reason };
  if (result.kind === 'retry') {
    return {
      kind: 'again',
      details: `${state}: ${result.reason} (run again in ${formatDuration(result.delayMs)})`,
      reason: result.reason,
      outcome: result.outcome,
      delayMs: result.delayMs,
    };
  }
  if (result.kind === 'next') {
    const named = result.next;
    if (named !== undefined && named !== 'complete' && !(states.indexOf(named) > index)) {
      const reason = `the driver reported an invalid next state '${named}'`;
      return { kind: 'fail', details: `${state}: ${reason}`, reason, outcome: 'failed' };
    }
    const to = named ?? states[index + 1] ?? 'complete';
    return { kind: 'advance', to, details: result.details ?? '', ended: to === 'complete' };
  }
  // Text is made only where it is shown: most reports are a plain `next`.
  const reason = result.kind === 'failed' ? result.reason : `timed out after ${formatDuration(timeoutMs)}`;
  // A driver that enforces its own timeouts (exec) says so with `timeout: true`.
  const timedOut = result.kind === 'timeout' || result.timeout === true;
  return { kind: 'fail', details: `${state}: ${reason}`, reason, outcome: timedOut ? 'timeout' : 'failed' };
}

/** What the orchestrator knows of itself when it decides what may start (SPEC §1, §4, §6). */
export interface GateInput {
  /** `strategy pause`: no new subcloud until `resume`. */
  paused: boolean;
  /** An abort (or a fatal error): no new subcloud; those in flight run to their end. */
  noNewSubclouds: boolean;
  /** A signal, a lost lock, a file fault: no operation starts at all, not even the next state of one in flight. */
  noNewOperations: boolean;
  /** Steps failed so far and the failure budget (null: none). */
  failed: number;
  limit: number | null;
  /** The running stage's own budget is exceeded (domain/stage-gates.ts): it starts no more subclouds. */
  stageHeld?: boolean;
  /**
   * An apply that finishes an abort (or an abort now): the runs in flight are waited for (or
   * stopped), but no state starts after them, not even the next state of one in flight.
   */
  noNextStates?: boolean;
}

/** What may start now: the one stop rule, asked before every start and again at every commit. */
export interface Gate {
  /** A subcloud never started (or put back by a retry) may start. */
  newSubclouds: boolean;
  /** A subcloud caught mid-state by the last process, or in flight now, may run its next operation. */
  operations: boolean;
  /** Nothing new will start in this run: a stage ends once none is in flight. */
  stopping: boolean;
  /**
   * A subcloud whose run ended may run its next state (or a retry of it). Unset: as `operations`.
   * False while an abort is finished: a run left going is still waited for (its subcloud takes its
   * slot), but nothing starts after it.
   */
  nextStates?: boolean;
}

export function gate(s: GateInput): Gate {
  const budgetSpent = s.limit !== null && s.failed >= s.limit;
  const stopping = s.noNewSubclouds || s.noNewOperations || budgetSpent || s.stageHeld === true || s.noNextStates === true;
  return { newSubclouds: !s.paused && !stopping, operations: !s.noNewOperations, stopping, nextStates: !s.noNewOperations && s.noNextStates !== true };
}

/** Whether one more subcloud may take a slot of a window of `window` with `inFlight` taken. */
export function mayTakeSlot(g: Gate, kind: 'new' | 'resumed', inFlight: number, window: number): boolean {
  if (inFlight >= window) return false;
  return kind === 'new' ? g.newSubclouds : g.operations;
}

/**
 * What the stop rule does with one transition about to be committed (SPEC §6, issue "one stop
 * rule"): `keep` it, `hold` it back (a first start the gate no longer lets through: nothing of it
 * is written, the subcloud keeps its place), or `strip` what it would start (it still closes the
 * run that ended and moves the step, but opens no operation and schedules no retry: the step
 * stays mid-state for `apply` to resume).
 */
export function stopRule(
  t: { close?: unknown; startAttempt?: number; retryInMs?: number },
  g: Gate,
  slot: { started: boolean; resumed: boolean },
): 'keep' | 'hold' | 'strip' {
  const starts = t.startAttempt !== undefined || t.retryInMs !== undefined;
  if (!starts) return 'keep';
  if (t.close === undefined && !slot.started) {
    // The subcloud's first operation in this run.
    const allowed = slot.resumed ? g.operations && g.nextStates !== false : g.newSubclouds && g.operations;
    return allowed ? 'keep' : 'hold';
  }
  return g.operations && g.nextStates !== false ? 'keep' : t.close === undefined ? 'hold' : 'strip';
}

/**
 * Whether a transition opens a new subcloud (its first operation in this run, not a resumed one):
 * what a pause or an abort forbids. Only commits that carry one need to know the file's state.
 */
export function opensNewSubcloud(t: { close?: unknown; startAttempt?: number; retryInMs?: number }, slot: { started: boolean; resumed: boolean }): boolean {
  return (t.startAttempt !== undefined || t.retryInMs !== undefined) && t.close === undefined && !slot.started && !slot.resumed;
}

/** The strategy states, as the file holds them, in which no new subcloud starts. */
export const NO_NEW_SUBCLOUDS: readonly string[] = ['paused', 'abort requested', 'aborting'];

/**
 * How a run ends: the strategy's final state (null: left as it is, for `apply` to resume) and the
 * exit code (SPEC §8). A signal leaves the strategy as it was (applying, or paused); an abort
 * ends it aborted; a step failed or never started ends it failed.
 */
export function endOfRun(r: {
  signal: 'SIGINT' | 'SIGTERM' | null;
  aborting: boolean;
  counts: Record<string, number>;
  failedSeen: boolean;
}): { state: 'complete' | 'failed' | 'aborted' | null; exit: number } {
  if (r.signal) return { state: null, exit: r.signal === 'SIGTERM' ? EXIT.sigterm : EXIT.sigint };
  const state = r.aborting ? 'aborted' : r.counts.failed || r.failedSeen || r.counts.initial || r.counts.deferred ? 'failed' : 'complete';
  return { state, exit: exitForState(state) };
}

/**
 * The exit code of an ended strategy, as `apply` and `status --watch` give it. A strategy complete
 * whose audits disagreed on `auditWarned` sites exits 5 (EXIT.auditDisagrees), unless it was
 * created with `--audit-disagrees-ok` (`auditOk`): a pipeline that checks the exit code hears it.
 */
export function exitForState(state: string, auditWarned = 0, auditOk = false): number {
  if (state === 'complete') return auditWarned > 0 && !auditOk ? EXIT.auditDisagrees : EXIT.ok;
  if (state === 'aborted') return EXIT.aborted;
  return EXIT.failed;
}
