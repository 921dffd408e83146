/**
 * Progress lines of runs in flight (a driver's `onProgress`: exec's `$DCM_PROGRESS`), waiting to
 * become their steps' details. Like the processes of run-processes.ts they ride with the next
 * commit of transitions, or go on their own, so that progress never costs a commit per line:
 *
 * - a subcloud's details are written only when they change, and at most once a second;
 * - a commit made for progress alone happens at most once a second for the whole apply (at window
 *   500 that is one commit a second, not 500);
 * - a run that reports nothing costs nothing: no timer, no statement.
 *
 * Each line is held with the run it came from (its worker's op id). The orchestrator takes only
 * those whose run is still its step's current one, so a line from a run that has ended, or from an
 * earlier attempt, is dropped rather than written over a later state's details.
 */
import type { Timer, Timers } from '../platform/timers.js';

/** How often a subcloud's details may be written, and a progress-only commit be made. */
export const DETAILS_EVERY_MS = 1000;

export interface DetailsLine {
  stepId: number;
  /** The run it came from: the registry entry's op id when it was reported. */
  opId: number;
  text: string;
}

export class RunDetails {
  /** The latest line per step not yet written. */
  private readonly pending = new Map<number, DetailsLine>();
  /** The last line written per step, by which run, and when (ms). */
  private readonly written = new Map<number, { opId: number; text: string; atMs: number }>();
  private lastOwnMs = -Infinity;
  private timer: Timer | null = null;

  /**
   * `due`: a progress-only commit may be made now (the orchestrator schedules a flush). `clock`:
   * the time in ms, monotonic (the runtime's, or a test's own).
   */
  constructor(
    private readonly due: () => void,
    private readonly clock: () => number,
    private readonly timers: Timers,
  ) {}

  /** A run's newest line; one equal to what its run last had written is no change. */
  report(stepId: number, opId: number, text: string): void {
    const w = this.written.get(stepId);
    if (w && w.opId === opId && w.text === text) {
      this.pending.delete(stepId);
      return;
    }
    this.pending.set(stepId, { stepId, opId, text });
    this.arm();
  }

  /** A progress-only commit is due: some line may be written and the apply-wide pace allows it. */
  get overdue(): boolean {
    return this.timer === null && this.pending.size > 0 && this.clock() >= this.lastOwnMs + DETAILS_EVERY_MS && this.someDue(this.clock());
  }

  /**
   * The lines to write in the commit being made, those whose subcloud was not written within the
   * last second and whose run `current` says is still in flight (the others are dropped).
   */
  take(current: (stepId: number, opId: number) => boolean): DetailsLine[] {
    const now = this.clock();
    const out: DetailsLine[] = [];
    for (const [stepId, line] of this.pending) {
      if (!current(stepId, line.opId)) this.pending.delete(stepId);
      else if (this.dueAt(stepId, line.opId) <= now) out.push(line);
    }
    return out;
  }

  /**
   * The commit that carried `lines` was made (a busy file keeps them for the next try); `alone`:
   * it was made for them alone, which paces the next such commit.
   */
  committed(lines: readonly DetailsLine[], alone: boolean): void {
    const now = this.clock();
    if (alone) this.lastOwnMs = now;
    for (const l of lines) {
      this.written.set(l.stepId, { opId: l.opId, text: l.text, atMs: now });
      if (this.pending.get(l.stepId) === l) this.pending.delete(l.stepId);
    }
    this.arm();
  }

  /** The step's run ended: nothing of it is written any more. */
  forget(stepId: number): void {
    this.pending.delete(stepId);
    this.written.delete(stepId);
  }

  stop(): void {
    this.timer?.clear();
    this.timer = null;
  }

  /** When the step may be written again: a second after its last write by the same run. */
  private dueAt(stepId: number, opId: number): number {
    const w = this.written.get(stepId);
    return w && w.opId === opId ? w.atMs + DETAILS_EVERY_MS : -Infinity;
  }

  private someDue(now: number): boolean {
    for (const l of this.pending.values()) if (this.dueAt(l.stepId, l.opId) <= now) return true;
    return false;
  }

  /** A timer for the next progress-only commit, when something waits; unref'd: it keeps no process alive. */
  private arm(): void {
    if (this.timer || this.pending.size === 0) return;
    let first = Infinity;
    for (const l of this.pending.values()) first = Math.min(first, this.dueAt(l.stepId, l.opId));
    const at = Math.max(first, this.lastOwnMs + DETAILS_EVERY_MS);
    this.timer = this.timers.after(() => {
      this.timer = null;
      // A ride-along commit may have written what this timer was for: then wait for the next.
      if (this.overdue) this.due();
      else this.arm();
    }, Math.max(0, at - this.clock()));
    this.timer.unref();
  }
}
