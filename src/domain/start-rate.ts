/**
 * A start rate that ramps (`--start-rate N/min --ramp FACTOR --ramp-after K`), the pure part: the
 * option values, the rate in force after so many completed sites, the spacing it asks of two
 * starts, how it is stored and shown, and the invariant a judge checks against a run's starts.
 *
 * A start is a subcloud's first operation of the apply (its first state, or the state `strategy
 * retry` put it back to): the moment it takes work. The rate is held as a spacing, as a GCRA
 * limiter with a burst of one does: two starts are at least 60/N s apart, where N is the rate in
 * force at the later one. So no minute, wherever it begins, holds more than N starts, and 500
 * subclouds of a window never start in the same second. The rate is a brake on top of the window:
 * it never lets more subclouds run at once than the window does.
 *
 * The ramp counts the strategy's complete steps: after each K of them the rate is multiplied by
 * FACTOR (AWS IoT Jobs' exponentialRate counts succeeded things the same way).
 */
import { UsageError } from './errors.js';

export interface StartRate {
  /** Starts a minute before any ramp (above 0). */
  perMin: number;
  /** Multiplied by this after each `after` complete sites (1: no ramp). */
  factor: number;
  /** Complete sites per ramp step (null: no ramp). */
  after: number | null;
}

/** The fastest rate dcm holds: one start a millisecond. A ramp stops growing there. */
export const MAX_RATE_PER_MIN = 60_000;

const PER: Record<string, number> = { s: 60, sec: 60, second: 60, m: 1, min: 1, minute: 1, h: 1 / 60, hour: 1 / 60 };

/** `N/min` (also `N/s`, `N/h`; N may be a decimal, `0.5/min`), as starts a minute; null when it is none of them. */
export function readRatePerMin(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*\/\s*([a-z]+)\s*$/i.exec(text);
  if (!m) return null;
  const per = PER[m[2].toLowerCase()];
  if (per === undefined) return null;
  const n = Number(m[1]) * per;
  return n > 0 && n <= MAX_RATE_PER_MIN ? n : null;
}

/** The words that switch a rate off (`strategy update --start-rate none`). */
export const RATE_OFF = ['none', 'off'];

/**
 * The three options as given, checked on their own (a usage error names the option): undefined when
 * none was given, null for `--start-rate none` (where `allowOff`), else the rate.
 */
export function parseStartRateOptions(
  o: { startRate?: string; ramp?: string; rampAfter?: string },
  allowOff = false,
): StartRate | null | undefined {
  if (o.startRate === undefined) {
    if (o.ramp !== undefined || o.rampAfter !== undefined) throw new UsageError('--ramp and --ramp-after need --start-rate N/min: the rate they multiply');
    return undefined;
  }
  if (allowOff && RATE_OFF.includes(o.startRate.trim().toLowerCase())) {
    if (o.ramp !== undefined || o.rampAfter !== undefined) throw new UsageError('--start-rate none takes no --ramp or --ramp-after');
    return null;
  }
  const perMin = readRatePerMin(o.startRate);
  if (perMin === null) {
    throw new UsageError(
      `invalid --start-rate '${o.startRate}': give starts per minute, as 10/min (or 1/s, 30/h), above 0 and at most ${MAX_RATE_PER_MIN}/min${allowOff ? '; none removes the rate' : ''}`,
    );
  }
  if ((o.ramp === undefined) !== (o.rampAfter === undefined)) throw new UsageError('--ramp FACTOR and --ramp-after K go together: the rate is multiplied by FACTOR after each K complete subclouds');
  if (o.ramp === undefined) return { perMin, factor: 1, after: null };
  const factor = /^\s*\d+(\.\d+)?\s*$/.test(o.ramp) ? Number(o.ramp) : NaN;
  if (!(factor >= 1 && factor <= 100)) throw new UsageError(`invalid --ramp '${o.ramp}': give a factor from 1 to 100 (2 doubles the rate)`);
  const after = /^\s*\d+\s*$/.test(o.rampAfter!) ? Number(o.rampAfter) : NaN;
  if (!(Number.isSafeInteger(after) && after >= 1)) throw new UsageError(`invalid --ramp-after '${o.rampAfter}': give a number of complete subclouds, 1 or more`);
  return { perMin, factor, after };
}

/** The rate in force (starts a minute) once `completed` sites of the strategy are complete. */
export function rateInForce(r: StartRate, completed: number): number {
  if (r.after === null || r.factor === 1) return r.perMin;
  const steps = Math.floor(Math.max(0, completed) / r.after);
  return Math.min(MAX_RATE_PER_MIN, r.perMin * r.factor ** Math.min(steps, 10_000));
}

/** The least time between two starts at `perMin` (ms). */
export function startSpacingMs(perMin: number): number {
  return 60_000 / perMin;
}

/** A rate as people read it: `10/min`, `0.5/min`, `12.5/min`. */
export function formatPerMin(perMin: number): string {
  return `${Number(perMin.toPrecision(6))}/min`;
}

/** The options as shown in status and the report: `10/min`, `10/min x2 every 50 complete`. */
export function formatStartRate(r: StartRate): string {
  const base = formatPerMin(r.perMin);
  return r.after === null || r.factor === 1 ? base : `${base} x${Number(r.factor.toPrecision(6))} every ${r.after} complete`;
}

/** The rate in force with its options: `20/min (10/min x2 every 50 complete)`; `none` without one. */
export function describeRate(r: StartRate | null, completed: number): string {
  if (!r) return 'none';
  const now = rateInForce(r, completed);
  return r.after === null || r.factor === 1 ? formatPerMin(now) : `${formatPerMin(now)} (${formatStartRate(r)})`;
}

/** As the store keeps it (a stage's and a group's `start_rate`): JSON of the three values. */
export function storeStartRate(r: StartRate | null): string | null {
  return r === null ? null : JSON.stringify({ per_min: r.perMin, factor: r.factor, after: r.after });
}

/** A stored rate read back; null for none (or a value no version of dcm wrote). */
export function readStoredRate(text: string | null | undefined): StartRate | null {
  if (!text) return null;
  try {
    const o = JSON.parse(text) as { per_min?: unknown; factor?: unknown; after?: unknown };
    if (typeof o.per_min !== 'number' || !(o.per_min > 0)) return null;
    const factor = typeof o.factor === 'number' && o.factor >= 1 ? o.factor : 1;
    const after = typeof o.after === 'number' && o.after >= 1 ? o.after : null;
    return { perMin: o.per_min, factor, after };
  } catch {
    return null;
  }
}

/**
 * Whether a start may be made now, and when the next may: `lastStartMs` is the stage's last start
 * (null: none yet), all on one clock. `waitMs` is 0 when it may start now.
 */
export function nextStartWait(perMin: number, lastStartMs: number | null, nowMs: number): number {
  if (lastStartMs === null) return 0;
  return Math.max(0, lastStartMs + startSpacingMs(perMin) - nowMs);
}

/** A start of a subcloud's first operation, as a judge reads it from the history. */
export interface RateStart {
  atMs: number;
  cloud: string;
}

/** From `fromMs` on, this rate is in force (null: none). A schedule's segments are in time order. */
export interface RateSegment {
  fromMs: number;
  perMin: number | null;
}

export interface RateViolation {
  cloud: string;
  atMs: number;
  /** The start before it, and the rate in force at this one. */
  previous: { cloud: string; atMs: number };
  perMin: number;
  /** How much sooner than the rate allows it started (ms). */
  earlyMs: number;
}

/**
 * The invariant the simulator checks, and a test of the history: every start is at least 60/N s
 * after the start before it, N the rate in force at the later start (the schedule's last segment
 * begun at or before it). A start with no rate in force is never a violation. The spacing asked is
 * the later start's, whatever the earlier one's rate was: a rate set (or lowered) mid-rollout
 * spaces the first start after it from the last one before it. `toleranceMs` covers the clock's
 * grain (the history keeps microseconds: 0 is exact).
 */
export function startRateViolations(starts: readonly RateStart[], schedule: readonly RateSegment[], toleranceMs = 0): RateViolation[] {
  const sorted = [...starts].sort((a, b) => a.atMs - b.atMs);
  const segs = [...schedule].sort((a, b) => a.fromMs - b.fromMs);
  const out: RateViolation[] = [];
  let seg = -1;
  for (let i = 1; i < sorted.length; i++) {
    const s = sorted[i];
    while (seg + 1 < segs.length && segs[seg + 1].fromMs <= s.atMs) seg++;
    const perMin = seg >= 0 ? segs[seg].perMin : null;
    if (perMin === null) continue;
    const prev = sorted[i - 1];
    const early = startSpacingMs(perMin) - (s.atMs - prev.atMs);
    if (early > toleranceMs) out.push({ cloud: s.cloud, atMs: s.atMs, previous: { cloud: prev.cloud, atMs: prev.atMs }, perMin, earlyMs: early });
  }
  return out;
}

/**
 * The schedule of a rate with its ramp: `changes` are the rate options set over time (create's at
 * the start, each `strategy update` after; null: removed) and `completedMs` the times sites
 * completed. The rate in force at any moment is the options then in force, ramped by the sites
 * complete by then.
 */
export function rampSchedule(changes: readonly { atMs: number; rate: StartRate | null }[], completedMs: readonly number[]): RateSegment[] {
  const events: { atMs: number; kind: 'set' | 'done'; rate?: StartRate | null }[] = [
    ...changes.map((c) => ({ atMs: c.atMs, kind: 'set' as const, rate: c.rate })),
    ...completedMs.map((atMs) => ({ atMs, kind: 'done' as const })),
  ];
  // At one instant a change applies before a completion: either way the later start sees both.
  events.sort((a, b) => a.atMs - b.atMs || (a.kind === b.kind ? 0 : a.kind === 'set' ? -1 : 1));
  let rate: StartRate | null = null;
  let done = 0;
  const out: RateSegment[] = [];
  for (const e of events) {
    if (e.kind === 'set') rate = e.rate ?? null;
    else done++;
    const perMin = rate ? rateInForce(rate, done) : null;
    const last = out[out.length - 1];
    if (last && last.fromMs === e.atMs) last.perMin = perMin;
    else if (!last || last.perMin !== perMin) out.push({ fromMs: e.atMs, perMin });
  }
  return out;
}

/**
 * The report's lines of the stages' rates (`[option, value]`, as its "what was rolled out" lists
 * the create's options): the rate each stage ran with and the rate in force once `completed`
 * sites were complete. One line when every stage had the same rate; none when no stage had one.
 */
export function rateReportLines(stages: readonly { stage: number; start_rate?: string | null }[], completed: number): [string, string][] {
  const rated = stages.map((s) => ({ stage: s.stage, rate: readStoredRate(s.start_rate) }));
  if (!rated.some((s) => s.rate)) return [];
  const line = (r: StartRate | null) => (r ? `${formatStartRate(r)}; in force at the end: ${formatPerMin(rateInForce(r, completed))}` : 'none');
  const texts = rated.map((s) => line(s.rate));
  if (texts.every((t) => t === texts[0])) return [['--start-rate', texts[0]]];
  return rated.map((s, i) => [`--start-rate (stage ${s.stage})`, texts[i]]);
}
