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
 * The ETA with what holds the rollout: a known wait is added and said (`2h 0m (includes 1h 59m
 * waiting for maintenance window …)`); an unknown one is said (`23s once resumed`). `latestOpen`:
 * a window some later subcloud waits for, from now, plus one subcloud's time: the rollout cannot
 * end before it.
 */
export function etaText(estMs: number, hold: Hold | null, paused: boolean, latest: { ms: number; label: string } | null): string {
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
  const waits = hold?.waits ?? (paused ? 'once resumed' : null);
  return `${formatSpan(ms)}${note}${waits ? ` ${waits}` : ''}`;
}

/** A deferred step's line: `s3: pre check, try 3 at 2026-12-04 06:30:00 UTC (in 45s)`. */
export function deferredLine(d: { cloud: string; state: string; attempt: number; dueMs: number | null }, nowMs: number): string {
  if (d.dueMs === null) return `${d.cloud}: ${d.state}, try ${d.attempt + 1} when a slot is free`;
  const at = new Date(d.dueMs).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  const when = d.dueMs > nowMs ? `in ${formatSpan(d.dueMs - nowMs)}` : 'due, when a slot is free';
  return `${d.cloud}: ${d.state}, try ${d.attempt + 1} at ${at} (${when})`;
}
