/**
 * What a run's report makes of its step: the transition to commit, and what it counts toward (a
 * failure of the strategy's budget, of its stage's, a retry used, a run cut off). The meaning of a
 * report is domain/control.ts's `decideReport`; the change it builds is domain/transition.ts's;
 * whether a site that did not answer is tried again is the deferral's verdict, handed in.
 *
 * Pure: no store, no timer, no registry. The caller (the commit loop) applies what it returns.
 */
import { decideReport, type ReportResult } from '../domain/control.js';
import { abortStopped, advance, closing, defer, fail, NEXT_ATTEMPT, runAgain, type Transition } from '../domain/transition.js';
import type { DeferralDecision } from '../domain/deferral.js';
import { formatTimestamp } from '../domain/time.js';
import { TYPES, type StrategyType } from '../domain/types.js';
import { DEFERRED_RUN_PREFIX } from '../store/deferrals.js';
import type { Worker } from './registry.js';

/** A driver's answer, as the registry's owner received it. */
export interface Report {
  stepId: number;
  opId: number;
  result: ReportResult;
  finishedAt: string;
  finishedMs: number;
}

export interface Decided {
  transition: Transition;
  /** The step failed: `stage` too when its stage's own budget counts it. */
  failed: null | 'strategy' | 'stage';
  /** The run was cut off (interrupted): its next run is told so. */
  resumed: boolean;
  /** A retry of the state's budget was used. */
  retryUsed: boolean;
}

export interface DecideContext {
  type: StrategyType;
  states: readonly string[];
  stateTimeoutMs: number;
  /** The time `ms` from now, as the store writes times (a retry's due time). */
  timeIn(ms: number): string;
  /** A site did not answer: deferred again, or failed unreachable. */
  deferral(w: Worker, reason: string): DeferralDecision;
  /** `strategy abort --now` stopped the runs in flight: what their steps' details say (null: it did not). */
  abortedNow?(): string | null;
}

/** The report `r` of the run of `w` (the registry's entry it settled): what to commit. */
export function decideRun(w: Worker, r: Report, ctx: DecideContext): Decided {
  const { step, state } = w;
  const d = decideReport(state, ctx.states, r.result, ctx.stateTimeoutMs);
  const durationMs = Math.round(r.finishedMs - w.startedMs);
  const out = (transition: Transition, failed: Decided['failed'] = null, resumed = false, retryUsed = false): Decided => ({ transition, failed, resumed, retryUsed });
  // Stopped by an abort now: the run was cut off (it runs again only if the operator retries the
  // step), and the step is aborted with the operator's words. A run that ended ok meanwhile moves
  // on as usual, and the abort leaves its step in its next state, not started.
  const now = w.abandoned && r.result.kind !== 'next' ? (ctx.abortedNow?.() ?? null) : null;
  if (now !== null) return out(abortStopped(step, state, `${state}: ${now}`, closing(w.historyId, 'interrupted', r.finishedAt, now)), null, true);
  if (d.kind === 'again') {
    // The run is over without a result: its row closes (saying when the next attempt is due, so
    // that a resume waits it out), and the state runs again as a new attempt once the backoff is
    // over, through the same registry.
    const cut = d.outcome === 'interrupted';
    const retryAt = cut ? undefined : ctx.timeIn(d.delayMs);
    const close = closing(w.historyId, d.outcome, r.finishedAt, d.reason, undefined, retryAt);
    return out(runAgain(step, state, d.details, close, d.delayMs), null, cut, !cut);
  }
  if (d.kind === 'defer') {
    const dd = ctx.deferral(w, d.reason);
    if (dd.kind === 'defer') {
      const close = closing(w.historyId, 'failed', r.finishedAt, `${DEFERRED_RUN_PREFIX}${d.reason}`, durationMs, formatTimestamp(dd.dueMs * 1000));
      return out(defer(step, state, dd.details, close));
    }
    return out(fail(step, state, dd.details, closing(w.historyId, 'failed', r.finishedAt, dd.reason, durationMs)), 'strategy');
  }
  if (d.kind === 'advance') {
    const close = closing(w.historyId, 'ok', r.finishedAt, d.details, durationMs);
    // A custom type has no endpoint nor prestage status to bring up to date.
    const completes = d.ended && ctx.type !== 'custom' ? { endpoint: TYPES[ctx.type].endpoint } : undefined;
    const startAttempt = d.ended ? undefined : NEXT_ATTEMPT;
    // The site's audit after its last state (audit-after.ts), which the subcloud row takes.
    const observed = r.result.kind === 'next' ? r.result.audit : undefined;
    return out(advance(step, state, d.to, d.details, close, startAttempt, completes, observed));
  }
  const close = closing(w.historyId, d.outcome, r.finishedAt, d.reason, durationMs);
  return out(fail(step, state, d.details, close, r.result.kind === 'failed' ? r.result.audit : undefined), 'stage');
}
