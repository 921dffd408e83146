/**
 * One committed change of one step, the unit the orchestrator batches into a transaction, and the
 * few shapes it takes. Plain data, built here and nowhere else, so that every place that starts,
 * retries, advances or fails a step writes the same fields (SPEC §1 "durable before visible").
 */
import type { Endpoint } from './types.js';
import type { AuditReport } from './audit.js';

export type RunOutcome = 'ok' | 'failed' | 'timeout' | 'skipped' | 'interrupted';

export interface Transition {
  stepId: number;
  subcloudId: number;
  cloud: string;
  from: string;
  to: string;
  details: string;
  /** The running history row this transition closes, with how it ended and when. */
  close?: Closing;
  /** The same state runs again after this delay (a retry): the subcloud keeps its slot. */
  retryInMs?: number;
  /**
   * Set when an operation for `to` starts right after the commit: its attempt number, or
   * NEXT_ATTEMPT for the one after the history's last, which the commit reads in its own
   * transaction and writes here.
   */
  startAttempt?: number;
  /** Filled in by commit: the history row opened for that operation. */
  historyId?: number;
  /** Ends the step: the subcloud's endpoint becomes in-sync (prestage: prestage status complete). */
  completes?: { endpoint: Endpoint | null };
  ended: boolean;
  /** What the site said in its audit after its last state: the subcloud row takes it (after `completes`). */
  observed?: AuditReport;
  /**
   * Filled in by commit: the subcloud of a transition that starts an operation was taken out
   * (`unmanaged`, `offline`): the operation is not started, and its run fails saying so.
   */
  siteOut?: string;
}

/**
 * Whether committing `t` takes a subcloud in flight out of it (its end, or a deferral): its slot
 * is free from that commit on, and the stage's count in flight one less (issue 51: the next
 * subcloud takes the slot in the same commit).
 */
export function leavesFlight(t: Transition): boolean {
  return (t.ended || t.to === 'deferred') && t.startAttempt === undefined && t.retryInMs === undefined && t.from !== 'initial' && t.from !== 'deferred';
}

/** The step a transition is about, as the orchestrator holds it. */
export interface StepRef {
  id: number;
  subcloudId: number;
  cloud: string;
  state: string;
}

/** How the run being closed ended. */
export interface Closing {
  historyId: number;
  outcome: RunOutcome;
  finishedAt: string;
  details: string;
  /** How long the operation ran; an ok run's duration goes into the type's statistics. */
  durationMs?: number;
  /** A retry follows: when its next attempt is due (ISO), kept in the history so a resume waits it out. */
  retryAt?: string;
}

/**
 * Every transition is built here, with every field in the same order (the optional ones left
 * undefined): one object shape for all of them, which the commit loop reads tens of thousands of
 * times a second (a spread of a partial object gave V8 many shapes, measurably slower).
 */
function make(
  step: StepRef,
  from: string,
  to: string,
  details: string,
  close: Closing | undefined,
  retryInMs: number | undefined,
  startAttempt: number | undefined,
  completes: { endpoint: Endpoint | null } | undefined,
  ended: boolean,
  observed?: AuditReport,
): Transition {
  return { stepId: step.id, subcloudId: step.subcloudId, cloud: step.cloud, from, to, details, close, retryInMs, startAttempt, historyId: undefined, completes, ended, observed, siteOut: undefined };
}

/** How a run closed, with every field in the same order (see `make`). */
export function closing(historyId: number, outcome: RunOutcome, finishedAt: string, details: string, durationMs?: number, retryAt?: string): Closing {
  return { historyId, outcome, finishedAt, details, durationMs, retryAt };
}

/**
 * The attempt after those the history holds for the state, counted by the commit in its own
 * transaction: no read of its own before each start (each an autocommit read, with a WAL read
 * lock taken and dropped), and none of every step's attempts held for the whole run.
 */
export const NEXT_ATTEMPT = 0;

/** Run `state` (the subcloud's first operation in this run, or a retry after its backoff) as `attempt`. */
export function startRun(step: StepRef, from: string, state: string, attempt: number): Transition {
  return make(step, from, state, '', undefined, undefined, attempt, undefined, false);
}

/** The run closes and the same state runs again after `delayMs`, as a new attempt. */
export function runAgain(step: StepRef, state: string, details: string, close: Closing, delayMs: number): Transition {
  return make(step, state, state, details, close, delayMs, undefined, undefined, false);
}

/** The run closed ok: on to `to` (started as `startAttempt` unless the step ended or nothing may start). */
export function advance(
  step: StepRef,
  state: string,
  to: string,
  details: string,
  close: Closing,
  startAttempt: number | undefined,
  completes: { endpoint: Endpoint | null } | undefined,
  observed?: AuditReport,
): Transition {
  const ended = to === 'complete';
  return make(step, state, to, details, close, undefined, ended ? undefined : startAttempt, completes, ended, observed);
}

/** The run closed failed (or timed out): the step is `failed` (`observed`: an audit that disagreed). */
export function fail(step: StepRef, state: string, details: string, close: Closing, observed?: AuditReport): Transition {
  return make(step, state, 'failed', details, close, undefined, undefined, undefined, true, observed);
}

/**
 * The run was stopped by `strategy abort --now` (or found stopped by it): the step is `aborted`,
 * its details saying who stopped it and why.
 */
export function abortStopped(step: StepRef, state: string, details: string, close: Closing): Transition {
  return make(step, state, 'aborted', details, close, undefined, undefined, undefined, true);
}

/**
 * The site did not answer: the run closes (its `retryAt` says when the next try is due, so that a
 * resume waits it out) and the step is `deferred`, giving up its slot until then.
 */
export function defer(step: StepRef, state: string, details: string, close: Closing): Transition {
  return make(step, state, 'deferred', details, close, undefined, undefined, undefined, false);
}

/** Why the operation of a subcloud taken out of the rollout is not started (its run's failure). */
export function siteOutReason(cloud: string, out: string): string {
  const back = out === 'offline' ? 'once it answers again' : `after \`dcm subcloud manage ${cloud}\``;
  return `not started: ${cloud} is ${out} (taken out while the strategy applied); \`dcm strategy retry ${cloud}\` ${back}`;
}
