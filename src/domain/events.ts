/**
 * The strategy's event record (`dcm strategy events`): what each event is called and what its
 * details say. Pure: the commands and the orchestrator write them, each in the transaction of the
 * change it records.
 */
import { UsageError } from './errors.js';

function reasonError(message: string): never {
  throw new UsageError(message);
}

export const EVENTS = {
  applyStarted: 'apply started',
  applyEnded: 'apply ended',
  lockTakenOver: 'lock taken over',
  /** One of several workers took over one that was gone (orchestrator/workers.ts). */
  workerTakenOver: 'worker taken over',
  runsAdopted: 'runs adopted',
  paused: 'paused',
  resumed: 'resumed',
  updated: 'updated',
  abortRequested: 'abort requested',
  aborted: 'aborted',
  /** `strategy abort --now`: the runs in flight are stopped, not waited for (its reason is theirs). */
  abortNow: 'abort now',
  retried: 'retried',
  /** `strategy-step resolve`: how a run on a host that is gone ended, said by the operator. */
  runResolved: 'run resolved',
  /**
   * A run of another host's held as of unknown outcome: its host has not said how it ended within
   * its bound, or its state has no timeout (orchestrator/remote-runs.ts); on_event hears it.
   */
  runUnknown: 'run unknown',
  /** A stage's gate or budget: soaking, checking, held, paused, passed, promoted (README "Stage gates"). */
  stageGate: 'stage gate',
  /** `subcloud-group update` while a strategy exists: what changed of the group. */
  groupUpdated: 'group updated',
  /** The strategy's `on_event` command failed (orchestrator/notify.ts): which notice, and how. */
  notificationFailed: 'notification failed',
  /** A group's subclouds wait for its maintenance window (orchestrator/maintenance-wait.ts), and its opening. */
  maintenanceWait: 'maintenance wait',
  maintenanceOpen: 'maintenance window open',
  /** The strategy ended complete while the audit after some sites' last state disagreed (issue 49). */
  auditDisagrees: 'audit disagrees',
  /** A site deferred (it did not answer): its first deferral in this strategy (issue 49). */
  deferred: 'deferred',
  /** An orchestrator found gone with the strategy still running (by the next apply, or `status`). */
  orchestratorDead: 'orchestrator dead',
  /** `strategy delete`: the last event of a kept record (store/archive.ts), with who and why. */
  deleted: 'deleted',
} as const;

/**
 * The events a running orchestrator's look at the store reads (store/strategy.ts controlSnapshot):
 * an abort now, and the last resume (a pause and a resume both between two looks leave the state
 * as it was; the resume's event says they happened).
 */
export const CONTROL_EVENTS = { now: EVENTS.abortNow, retried: EVENTS.retried, resumed: EVENTS.resumed } as const;

/** What an operator does to a strategy: the events `strategy status`'s `last action` names. */
export const OPERATOR_EVENTS: readonly string[] = [
  EVENTS.paused,
  EVENTS.resumed,
  EVENTS.updated,
  EVENTS.abortRequested,
  EVENTS.aborted,
  EVENTS.abortNow,
  EVENTS.retried,
  EVENTS.runResolved,
  EVENTS.groupUpdated,
];

/** How long an operator's `--reason` may be. */
export const REASON_MAX = 500;

/**
 * `--reason TEXT`, checked as a usage error before the file is read: words a person reads in the
 * record, the status and the report, so one line of printable text.
 */
export function checkReason(text: string | undefined): string | null {
  if (text === undefined) return null;
  const t = text.trim();
  if (t === '') return reasonError("option '--reason' is empty: say why");
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(t)) return reasonError("option '--reason' holds a control character (a newline, a tab, an escape): give one line of text");
  if (t.length > REASON_MAX) return reasonError(`option '--reason' is ${t.length} characters long: at most ${REASON_MAX}`);
  return t;
}

/** The audit event's details: how many, and the first ones with what each site's audit said. */
export function auditDisagreesText(w: { count: number; first: { cloud: string; details: string }[] }, exit: number): string {
  const shown = w.first.slice(0, 5).map((f) => `${f.cloud} (${f.details})`).join(', ');
  return `${w.count} site(s) complete whose audit disagrees (exit ${exit}): ${shown}${w.count > 5 ? ` and ${w.count - 5} more` : ''}`;
}

/** What a run stopped by `strategy abort --now` is recorded with: `stopped by abort --now (alice@host1: site hangs)`. */
export function abortNowText(e: { user: string; host: string; reason: string | null }): string {
  return `stopped by abort --now (${e.user}@${e.host}${e.reason ? `: ${e.reason}` : ''})`;
}

/** The operator's action as `strategy status` says it: `paused by alice@host1 at T: canary alarms`. */
export function actionText(e: { at: string; event: string; user: string; host: string; reason: string | null }): string {
  return `${e.event} by ${e.user}@${e.host} at ${e.at}${e.reason ? `: ${e.reason}` : ' (no reason given)'}`;
}

export type EventName = (typeof EVENTS)[keyof typeof EVENTS];

export const EVENT_COLUMNS = ['time', 'event', 'user', 'host', 'pid', 'details', 'reason'];

/** A worker taken over: who it was, why it was taken for gone, what became of its runs. */
export function workerTakenText(t: { worker: { pid: number; host: string }; why: string; adopted: number; interrupted: number }): string {
  return `pid ${t.worker.pid} on ${t.worker.host}: ${t.why}; ${t.adopted} run(s) adopted, ${t.interrupted} interrupted`;
}

const shown = (v: string | number | null) => (v === null ? 'None' : String(v));

/** `name: old -> new` for each value that was given, as `strategy update` changed it. */
export function changeText(changes: readonly { name: string; from: string | number | null; to: string | number | null }[]): string {
  return changes.map((c) => `${c.name}: ${shown(c.from)} -> ${shown(c.to)}`).join('; ');
}

/**
 * The changes an `updated` event's details name, read back from changeText's words (values as
 * text, `None` for unset). The record keeps words, not columns, so that `strategy events` shows
 * what a person reads; this is its one reader (the report's windows over time).
 */
export function parseChanges(details: string): { name: string; from: string; to: string }[] {
  const out: { name: string; from: string; to: string }[] = [];
  for (const part of details.split('; ')) {
    const m = /^(.+?): (\S+) -> (\S+)$/.exec(part);
    if (m) out.push({ name: m[1], from: m[2], to: m[3] });
  }
  return out;
}

/** The name changeText gives a stage's window (`stage 2 window`), and the stage it names. */
export const stageWindowName = (stage: number) => `stage ${stage} window`;
export const MAX_PARALLEL_NAME = 'max parallel subclouds';

/** How an apply ended: the strategy's state (or that it stays as it is, after a signal) and the exit code. */
export function applyEndText(state: string | null, stays: string, signal: string | null, exit: number): string {
  if (state !== null) return `${state} (exit ${exit})`;
  return `stopped by ${signal ?? 'a signal'} (exit ${exit}); the strategy stays ${stays}`;
}

/** The runs a resume found left by an apply that was killed: adopted (waited for) and cut off (run again). */
export function adoptedText(adopted: number, interrupted: number): string {
  return `${adopted} run(s) left going by the last apply adopted (not run again); ${interrupted} cut off, run again`;
}
