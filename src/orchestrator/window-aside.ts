/**
 * The subclouds of a stage's window (window.ts) set aside until their maintenance window opens: off
 * the limiter, holding neither a slot nor a place the others of the stage need. Each goes back when
 * one timer, at the earliest opening, says its window opens (or at any pump after that).
 */
import type { CursorStep } from '../store/cursor.js';
import type { Timer } from '../platform/timers.js';
import type { TimeSource } from '../platform/runtime.js';

export class AsideSteps {
  /** Each subcloud set aside, and when (the runtime's monotonic ms) it is due to be asked again. */
  private readonly steps = new Map<number, { step: CursorStep; dueMs: number }>();
  /** The earliest `dueMs` of those: before it, a pump need not look at them (a pump per subcloud that ends). */
  private earliest = Infinity;
  private timer: Timer | null = null;
  private timerDue = Infinity;

  constructor(
    private readonly rt: TimeSource,
    /** Null when the subcloud may start its first state now, else the milliseconds until it may. */
    private readonly hold: (step: CursorStep) => number | null,
    /** The window looks again (the timer's end). */
    private readonly pump: () => void,
  ) {}

  get size(): number {
    return this.steps.size;
  }

  /** The windows may have changed: every subcloud set aside is asked again at the next pump. */
  recheck(): void {
    for (const a of this.steps.values()) a.dueMs = 0;
    this.earliest = 0;
  }

  /** Set a subcloud aside until its window opens (`inMs` from now). */
  set(step: CursorStep, inMs: number): void {
    const dueMs = this.rt.clock.mono() + inMs;
    // Read again while aside (a rescan): it waits there once.
    this.steps.set(step.id, { step, dueMs });
    this.earliest = Math.min(this.earliest, dueMs);
  }

  /**
   * Those whose window has opened, in step order, to go back to the limiter; the rest wait for one
   * timer, at the earliest opening. Once nothing new may start (`stopping`) they are let go: they
   * stay as they are in the file for the next apply.
   */
  bringBack(stopping: boolean): CursorStep[] {
    if (this.steps.size === 0 || stopping) {
      this.steps.clear();
      this.earliest = Infinity;
      this.arm(Infinity);
      return [];
    }
    const nowMs = this.rt.clock.mono();
    if (nowMs < this.earliest) {
      this.arm(this.earliest);
      return [];
    }
    let earliest = Infinity;
    const back: CursorStep[] = [];
    for (const a of this.steps.values()) {
      if (a.dueMs <= nowMs) {
        const inMs = this.hold(a.step);
        if (inMs === null) {
          back.push(a.step);
          this.steps.delete(a.step.id);
          continue;
        }
        a.dueMs = nowMs + inMs;
      }
      earliest = Math.min(earliest, a.dueMs);
    }
    this.earliest = earliest;
    this.arm(earliest);
    return back.sort((a, b) => a.id - b.id);
  }

  /** No timer left behind (the stage has ended). */
  stop(): void {
    this.arm(Infinity);
  }

  private arm(dueMs: number): void {
    if (dueMs === this.timerDue) return;
    this.timer?.clear();
    this.timer = null;
    this.timerDue = dueMs;
    if (dueMs === Infinity) return;
    this.timer = this.rt.timers.after(() => {
      this.timer = null;
      this.timerDue = Infinity;
      this.pump();
    }, Math.max(0, dueMs - this.rt.clock.mono()));
  }
}
