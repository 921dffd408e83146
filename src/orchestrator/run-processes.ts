/**
 * The processes runs started (exec driver), waiting to be recorded in their history rows. They go
 * with the next commit of transitions, or on their own after a short delay: a commit each would
 * double the commits per run. Until then the launcher's `.pid` file beside the run's log tells a
 * later apply where the run is.
 */
import type { RunProcess } from '../platform/proc.js';
import type { Timer, Timers } from '../platform/timers.js';

/** How long a started run's process may wait to be recorded with other writes. */
const PROC_RECORD_MS = 50;

export class RunProcesses {
  private procs: [number, RunProcess][] = [];
  private timer: Timer | null = null;

  /** `due`: the delay is over, a commit should happen (the orchestrator schedules a flush). */
  constructor(
    private readonly due: () => void,
    private readonly timers: Timers,
  ) {}

  add(historyId: number, proc: RunProcess): void {
    this.procs.push([historyId, proc]);
    this.timer ??= this.timers.after(() => {
      this.timer = null;
      this.due();
    }, PROC_RECORD_MS);
  }

  /** Some wait to be recorded. */
  get waiting(): boolean {
    return this.procs.length > 0;
  }

  /** Some wait, and their delay is over: record them even with nothing else to commit. */
  get overdue(): boolean {
    return this.timer === null && this.procs.length > 0;
  }

  /** Those waiting, to record in the caller's transaction; `recorded()` once it has committed. */
  get list(): readonly [number, RunProcess][] {
    return this.procs;
  }

  /** The transaction that recorded them committed (a busy file keeps them for the next try). */
  recorded(): void {
    this.stop();
    this.procs = [];
  }

  stop(): void {
    this.timer?.clear();
    this.timer = null;
  }
}
