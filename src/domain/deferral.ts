/**
 * Sites that do not answer (issue 18, "Sites that answer"), the pure part: what a deferred step is,
 * how `--defer-delay` and `--defer-until` read, and whether a site that did not answer is tried
 * again later or failed. No SQLite, no clock (every time is handed in), no process.
 *
 * A state command that exits EX_TEMPFAIL (75, or a code of the exec config's `defer_exit_codes`)
 * says "not now, try later" rather than "this failed": the step goes to `deferred`, gives its slot
 * to the next site, and runs the same state again (a new attempt) after the delay, until the
 * deadline; then it fails with `unreachable` in its details.
 */
import { durationProblem, formatDuration, parseDuration } from './durations.js';
import { UsageError } from './errors.js';

/** The step state of a subcloud waiting to be tried again: not ended, counted apart from failed. */
export { STEP_DEFERRED } from './types.js';

/** sysexits.h EX_TEMPFAIL: "temporary failure; the user is invited to retry". */
export const EX_TEMPFAIL = 75;

/** `--defer-delay` when not given: long enough for a site to come back, short enough to notice. */
export const DEFAULT_DEFER_DELAY_MS = 60_000;

/** The word a step that never answered fails with (its details name it; scripts grep for it). */
export const UNREACHABLE = 'unreachable';

/**
 * `--defer-until`: a duration from the strategy's first start (`2h`), or a time (ISO 8601, with a
 * zone or taken as UTC). Absent: no deadline of its own (see decideDeferral).
 */
export type DeferUntil = { afterMs: number } | { atMs: number };

export function parseDeferDelay(text: string): number {
  const problem = durationProblem(text, { unitRequired: true });
  const ms = problem === null ? parseDuration(text, { unitRequired: true }) : null;
  if (ms === null || ms <= 0) throw new UsageError(`Invalid --defer-delay value: ${text}. ${problem ? capital(problem) : 'It must be longer than 0'}`);
  return ms;
}

/** Parse `--defer-until`; stored as the text given, read again at apply. */
export function parseDeferUntil(text: string): DeferUntil {
  const t = text.trim();
  if (durationProblem(t, { unitRequired: true }) === null) {
    const ms = parseDuration(t, { unitRequired: true })!;
    if (ms > 0) return { afterMs: ms };
  }
  // An ISO date and time: `2026-12-02T06:00`, `2026-12-02 06:00:00Z`, `…+01:00`. No zone: UTC.
  const iso = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?$/.exec(t);
  if (iso) {
    const at = Date.parse(`${iso[1]}T${iso[2]}${iso[3] ?? 'Z'}`);
    if (!Number.isNaN(at)) return { atMs: at };
  }
  throw new UsageError(`Invalid --defer-until value: ${text}. Give a duration from the apply's start (30m, 2h) or a time (2026-12-02T06:00Z)`);
}

/** The deadline in epoch ms, or null for none; `startedMs`: when the strategy's first step started. */
export function deadlineOf(until: DeferUntil | null, startedMs: number): number | null {
  if (until === null) return null;
  return 'atMs' in until ? until.atMs : startedMs + until.afterMs;
}

export type DeferralDecision =
  | { kind: 'defer'; dueMs: number; details: string }
  | { kind: 'fail'; details: string; reason: string };

/**
 * What becomes of a step whose site did not answer in `state` at `nowMs`. With a deadline, it is
 * tried again after `delayMs` while the next try still starts before the deadline, else it fails.
 * Without one, it is tried again while its stage has other work (`othersLeft`: steps not ended and
 * not deferred) and fails once every other step of its stage is done: a stage never waits for a
 * site that does not answer longer than the rest of the stage takes.
 */
export function decideDeferral(a: {
  state: string;
  reason: string;
  nowMs: number;
  delayMs: number;
  deadlineMs: number | null;
  othersLeft: boolean;
  /** Times this step was deferred before (shown, so that a long wait is visible). */
  deferrals: number;
}): DeferralDecision {
  const dueMs = a.nowMs + a.delayMs;
  const goesOn = a.deadlineMs === null ? a.othersLeft : dueMs <= a.deadlineMs;
  const tries = a.deferrals + 1;
  if (goesOn) {
    return { kind: 'defer', dueMs, details: `${a.state}: ${a.reason}; deferred (${tries}), tried again in ${formatDuration(a.delayMs)}` };
  }
  const why = a.deadlineMs === null ? 'the rest of its stage is done' : 'the --defer-until deadline is reached';
  const reason = `${UNREACHABLE}: ${a.reason} (${tries} tr${tries === 1 ? 'y' : 'ies'}; ${why})`;
  return { kind: 'fail', details: `${a.state}: ${reason}`, reason };
}

function capital(s: string): string {
  return s[0].toUpperCase() + s.slice(1);
}
