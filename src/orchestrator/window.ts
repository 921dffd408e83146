/**
 * One stage's window: which subcloud starts next, and when. It is fed from the file by a cursor
 * over the stage's open steps (a window's worth at a time), counts its own slots rather than
 * queueing a closure per subcloud, and can be held (pause, failure budget), resized and stopped.
 * A subcloud held back is kept, in order, for when the window opens again: a pausable window
 * waits, it never skips.
 *
 * It never sees the registry of workers: it asks its owner to run a subcloud and learns when the
 * subcloud has ended (or was not started after all).
 */
import type { CursorStep } from '../store/cursor.js';

/** What the owner says about starting now. */
export interface Gate {
  /** A subcloud never started (or put back by a retry) may start. */
  newSubclouds: boolean;
  /** A subcloud caught mid-state by the last process may go on (it was in flight). */
  resumed: boolean;
  /** Nothing more will start in this run (abort, signal, fatal error, failure budget): end once in flight is 0. */
  stopping: boolean;
}

export interface WindowHost {
  /** Up to `limit` more of the stage's open steps, in order; fewer once there are no more. */
  fetch(limit: number): CursorStep[];
  gate(): Gate;
  /**
   * Run the subcloud to its end. Resolves true once it has ended, false when it was held back
   * before its first state started (it is then kept for later).
   */
  run(step: CursorStep): Promise<boolean>;
}

/** Steps read ahead of need: enough for a window refilling, few enough to stay small. */
const READ_AHEAD_MAX = 256;

export class StageWindow {
  private readonly buffer: CursorStep[] = [];
  private bufferHead = 0;
  private exhausted = false;
  private inFlight = 0;
  private done: (() => void) | null = null;
  private finished = false;

  constructor(
    private size: number,
    private readonly host: WindowHost,
  ) {}

  get window(): number {
    return this.size;
  }

  get running(): number {
    return this.inFlight;
  }

  /** Resolves when every step of the stage has ended, or when stopping and none is in flight. */
  run(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.done = resolve;
      this.pump();
    });
  }

  /** A larger window starts more at once; a smaller one starts none until fewer than `n` run. */
  resize(n: number): void {
    this.size = Math.max(1, n);
    this.pump();
  }

  /** Start what may start now; end when nothing is left. Called on every change. */
  pump(): void {
    if (this.finished || !this.done) return;
    while (this.inFlight < this.size) {
      const step = this.peek();
      if (!step) break;
      const gate = this.host.gate();
      const resumed = step.state !== 'initial' && !step.retried;
      if (!(resumed ? gate.resumed : gate.newSubclouds)) break;
      this.take();
      this.inFlight++;
      void this.host.run(step).then((ended) => {
        this.inFlight--;
        if (!ended) this.putBack(step);
        this.pump();
      });
    }
    const gate = this.host.gate();
    if (this.inFlight === 0 && (gate.stopping || !this.peek())) {
      this.finished = true;
      this.done();
    }
  }

  private peek(): CursorStep | undefined {
    if (this.bufferHead >= this.buffer.length && !this.exhausted) {
      this.buffer.length = 0;
      this.bufferHead = 0;
      const want = Math.min(READ_AHEAD_MAX, Math.max(1, this.size));
      const more = this.host.fetch(want);
      if (more.length < want) this.exhausted = true;
      this.buffer.push(...more);
    }
    return this.buffer[this.bufferHead];
  }

  private take(): void {
    this.bufferHead++;
  }

  /**
   * A subcloud held back before it started goes back among those not started, in step order
   * (steps caught mid-state first, then by id, as the cursor reads them), to start first when the
   * window opens again.
   */
  private putBack(step: CursorStep): void {
    if (this.bufferHead > 0) this.buffer[--this.bufferHead] = step;
    else this.buffer.unshift(step);
    const rest = this.buffer.slice(this.bufferHead).sort((a, b) => order(a) - order(b) || a.id - b.id);
    this.buffer.length = 0;
    this.buffer.push(...rest);
    this.bufferHead = 0;
  }
}

function order(s: CursorStep): number {
  return s.state === 'initial' ? 1 : 0;
}
