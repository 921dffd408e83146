/**
 * When state operations time out. Every operation gets the same timeout, so deadlines arrive in
 * start order: a FIFO queue and a single timer for its head serve them all (a timer per operation
 * costs more than the work of a zero-latency operation). Entries of operations that already ended
 * are skipped when reached, or dropped by compaction, so the queue stays proportional to the
 * operations running, not to those run.
 *
 * It knows operations only by (stepId, opId) and asks its owner whether one is still running: the
 * registry of workers stays with the orchestrator (SPEC §1).
 */
import type { Timer } from '../platform/timers.js';
import type { TimeSource } from '../platform/runtime.js';

interface Deadline {
  at: number;
  stepId: number;
  opId: number;
}

export class Deadlines {
  private queue: Deadline[] = [];
  private head = 0;
  private timer: Timer | null = null;

  /**
   * `isRunning(stepId, opId)`: the operation is still the one running for its step.
   * `expire(stepId, opId)`: it ran past its deadline (called only while it is running).
   */
  constructor(
    private readonly timeoutMs: number,
    private readonly isRunning: (stepId: number, opId: number) => boolean,
    private readonly expire: (stepId: number, opId: number) => void,
    private readonly rt: TimeSource,
  ) {}

  /** An operation started now; `running` is how many run in all (for compaction). */
  add(stepId: number, opId: number, running: number): void {
    this.queue.push({ at: this.rt.clock.mono() + this.timeoutMs, stepId, opId });
    this.compact(running);
    this.arm();
  }

  private compact(running: number): void {
    if (this.queue.length - this.head <= 2 * running + 1024) return;
    this.queue = this.queue.slice(this.head).filter((d) => this.isRunning(d.stepId, d.opId));
    this.head = 0;
  }

  private arm(): void {
    if (this.timer || this.head >= this.queue.length) return;
    this.timer = this.rt.timers.after(() => this.fire(), this.queue[this.head].at - this.rt.clock.mono());
  }

  private fire(): void {
    this.timer = null;
    // Monotonic: a step of the wall clock moves no deadline.
    const t = this.rt.clock.mono();
    while (this.head < this.queue.length && this.queue[this.head].at <= t) {
      const d = this.queue[this.head++];
      if (this.isRunning(d.stepId, d.opId)) this.expire(d.stepId, d.opId);
    }
    if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.arm();
  }

  /** No timer left behind to keep the process alive. */
  stop(): void {
    this.timer?.clear();
    this.timer = null;
  }
}
