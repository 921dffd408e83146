/**
 * Operator control during a rollout (SPEC §4 "Control while applying"), the pure part: the failure
 * budget, which strategy states each control command accepts, what a retry does to a step, and
 * what a driver's report means for a step. No SQLite, no clock, no process.
 */
import { formatDuration } from './durations.js';
import { EXIT, UsageError } from './errors.js';

/** `--max-failures N|P%`: a count of failed steps, or a share of the strategy's steps. */
export type MaxFailures = { count: number } | { percent: number };

/** Parse `3` or `5%` (also `2.5%`). Anything else is a usage error. */
export function parseMaxFailures(text: string): MaxFailures {
  const t = text.trim();
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(t);
  if (pct) {
    const percent = Number(pct[1]);
    if (percent > 0 && percent <= 100) return { percent };
    throw new UsageError(`invalid --max-failures '${text}': a percentage must be above 0% and at most 100%`);
  }
  if (/^\d+$/.test(t)) {
    const count = Number(t);
    if (count >= 1 && Number.isSafeInteger(count)) return { count };
  }
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
export type ReportResult =
  | { kind: 'next'; next?: string; details?: string }
  | { kind: 'failed'; reason: string; timeout?: boolean }
  | { kind: 'retry'; reason: string; outcome: 'failed' | 'timeout' | 'interrupted'; delayMs: number }
  | { kind: 'timeout' };

/** What a report means for the step that ran `state`. */
export type Decision =
  | { kind: 'advance'; to: string; details: string; ended: boolean }
  | { kind: 'fail'; details: string; reason: string; outcome: 'failed' | 'timeout' }
  /** The same state runs again, as a new attempt, after `delayMs` (a driver's own retry). */
  | { kind: 'again'; details: string; reason: string; outcome: 'failed' | 'timeout' | 'interrupted'; delayMs: number };

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

/**
 * Whether the window may start one more subcloud: not paused, no stop asked for, under the
 * failure budget, and fewer than `window` in flight (a window made smaller starts none until
 * enough have ended).
 */
export function mayStart(s: { paused: boolean; stopping: boolean; failed: number; limit: number | null; inFlight: number; window: number }): boolean {
  if (s.paused || s.stopping) return false;
  if (s.limit !== null && s.failed >= s.limit) return false;
  return s.inFlight < s.window;
}

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
  const state = r.aborting ? 'aborted' : r.counts.failed || r.failedSeen || r.counts.initial ? 'failed' : 'complete';
  return { state, exit: exitForState(state) };
}

/** The exit code of an ended strategy, as `apply` and `status --watch` give it. */
export function exitForState(state: string): number {
  if (state === 'complete') return EXIT.ok;
  if (state === 'aborted') return EXIT.aborted;
  return EXIT.failed;
}
