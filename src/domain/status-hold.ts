/**
 * What holds a rollout back, in the words `strategy status` says it (issue 34, "status at 3 a.m."):
 * a stage whose gate is soaking, checking, held or paused, or whose subclouds all wait for their
 * maintenance window, is not running, and the stage row, the ETA and the deferred steps say so
 * rather than `stage 2 of 2`, `eta 23s` and a bare count. Pure: rows and the time in, text out.
 */
import { formatSpan } from './estimate.js';
import { PENDING_GATES, type GateState } from './stage-gates.js';

export interface GateRow {
  stage: number;
  gate: string;
  gate_state: GateState | null;
  gate_reason: string | null;
  /** When a soak ends (epoch ms), null otherwise. */
  dueMs: number | null;
}

/** A group whose maintenance window is closed now, with subclouds of the current stage waiting for it. */
export interface ClosedWindow {
  group: string;
  label: string;
  /** When it opens: in ms on the caller's clock, and as the window's own clock says it (ISO). */
  opensMs: number;
  opensIso: string;
}

export interface Hold {
  /** Added to the stage row: `held by stage 1's gate: soaking, 12m left`. */
  text: string;
  /** A known wait before the rest can go on (a soak's rest, a window's opening), in ms from now. */
  waitMs: number | null;
  /** What the wait is, in the ETA: `soak of stage 1`, `maintenance window …`. */
  waitFor: string | null;
  /** When nothing known ends the hold, the ETA says what it waits for: `once resumed`. */
  waits: string | null;
}

/**
 * The hold on `current` (the first stage with a step not ended), or null when it is free to run.
 * `closed`: the windows its steps not started wait for, when all of them wait and none of it runs.
 */
export function stageHold(o: { current: number; gates: readonly GateRow[]; closed: readonly ClosedWindow[]; nowMs: number }): Hold | null {
  const pending = o.gates.find((g) => g.gate_state !== null && PENDING_GATES.includes(g.gate_state) && g.stage <= o.current);
  if (pending) {
    const whose = `stage ${pending.stage}'s gate`;
    switch (pending.gate_state) {
      case 'soaking': {
        const left = pending.dueMs === null ? null : Math.max(0, pending.dueMs - o.nowMs);
        return {
          text: `held by ${whose}: soaking${left === null ? '' : `, ${formatSpan(left)} left`}`,
          waitMs: left,
          waitFor: `the soak after stage ${pending.stage}`,
          waits: left === null ? 'after the soak' : null,
        };
      }
      case 'checking':
        return { text: `held by ${whose}: checking`, waitMs: null, waitFor: null, waits: 'after the gate check' };
      case 'held':
        // Its budget exceeded: only the operator ends it (`dcm strategy resume`).
        return { text: `held by stage ${pending.stage}'s failure budget${pending.gate_reason ? ` (${pending.gate_reason})` : ''}`, waitMs: null, waitFor: null, waits: 'once resumed' };
      default:
        // A pause gate, a failed check: paused until the operator resumes.
        return { text: `held by stage ${pending.stage}'s gate: paused${pending.gate_reason ? ` (${pending.gate_reason})` : ''}`, waitMs: null, waitFor: null, waits: 'once resumed' };
    }
  }
  if (o.closed.length === 0) return null;
  // Every subcloud of the stage still to start waits for a window, and none runs: the first to open ends the hold.
  const first = [...o.closed].sort((a, b) => a.opensMs - b.opensMs)[0];
  return {
    text: `held by maintenance window ${first.label} (group ${first.group}), opens ${first.opensIso}`,
    waitMs: Math.max(0, first.opensMs - o.nowMs),
    waitFor: `maintenance window ${first.label}`,
    waits: null,
  };
}

/**
 * The estimate of the time left, and what it waits for (issue 49: one estimator for the live view,
 * `status` and the report). `ms` includes the known waits (a soak, a maintenance window, a deferred
 * site's next try); `operator` names what only the operator ends (a pause, a gate holding, a run of
 * unknown outcome): the clock brings the end no nearer until then.
 */
export interface Eta {
  ms: number;
  /** ` (includes 1h 59m waiting for maintenance window …)`, or ''. */
  note: string;
  /** After a wait the clock ends but nothing estimates: `after the gate check`, `after the soak`. */
  waits: string | null;
  /** What only the operator ends: `paused`, `2 run(s) of unknown outcome …`. */
  operator: string | null;
}

/**
 * The ETA with what holds the rollout. `latest`: a window some later subcloud waits for, from now,
 * plus one subcloud's time (the rollout cannot end before it); `deferred`: likewise, a deferred
 * site's next try; `unknown`: runs held of unknown outcome (several hosts).
 */
export function etaOf(
  estMs: number,
  hold: Hold | null,
  paused: boolean,
  latest: { ms: number; label: string } | null,
  more: { deferred?: { ms: number; label: string } | null; unknown?: number } = {},
): Eta {
  let ms = estMs;
  let note = '';
  if (hold?.waitMs != null) {
    ms += hold.waitMs;
    note = ` (includes ${formatSpan(hold.waitMs)} waiting for ${hold.waitFor})`;
  }
  if (latest && latest.ms > ms) {
    ms = latest.ms;
    note = ` (waits for maintenance window ${latest.label})`;
  }
  if (more.deferred && more.deferred.ms > ms) {
    ms = more.deferred.ms;
    note = ` (waits for ${more.deferred.label})`;
  }
  // A gate that holds until resumed is the operator's to end; so is a pause (a window's wait is not).
  const gateHolds = hold?.waits === 'once resumed';
  const resumed = gateHolds || (hold?.waits == null && paused);
  const operator = more.unknown
    ? `${more.unknown} run(s) of unknown outcome: strategy-step resolve or strategy retry`
    : gateHolds
      ? hold!.text.replace(/^held by /, '')
      : paused
        ? 'paused'
        : null;
  return { ms, note, waits: resumed ? 'once resumed' : (hold?.waits ?? null), operator };
}

/**
 * The words: `23s`, `2h 0m (includes …)`, `5s after the gate check`, or `waits for the operator
 * (paused): 23s once resumed`. `elapsedMs`: how long ago it was estimated (a view counting down;
 * not while the operator holds it).
 */
export function etaWords(e: Eta | null, elapsedMs = 0, from = ''): string {
  if (e === null) return 'unknown';
  const ms = e.operator || e.waits === 'once resumed' ? e.ms : Math.max(0, e.ms - elapsedMs);
  // `from`: where the estimate came from (the live view's ` (from sim latency)`), before the wait.
  const text = `${formatSpan(ms)}${e.note}${from}${e.waits ? ` ${e.waits}` : ''}`;
  return e.operator ? `waits for the operator (${e.operator}): ${text}` : text;
}

/** `etaWords(etaOf(…))`, as `strategy status` says it. */
export function etaText(estMs: number, hold: Hold | null, paused: boolean, latest: { ms: number; label: string } | null): string {
  return etaWords(etaOf(estMs, hold, paused, latest));
}

/** A deferred step's line: `s3: pre check, try 3 at 2026-12-04 06:30:00 UTC (in 45s)`. */
export function deferredLine(d: { cloud: string; state: string; attempt: number; dueMs: number | null }, nowMs: number): string {
  if (d.dueMs === null) return `${d.cloud}: ${d.state}, try ${d.attempt + 1} when a slot is free`;
  const at = new Date(d.dueMs).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  const when = d.dueMs > nowMs ? `in ${formatSpan(d.dueMs - nowMs)}` : 'due, when a slot is free';
  return `${d.cloud}: ${d.state}, try ${d.attempt + 1} at ${at} (${when})`;
}
