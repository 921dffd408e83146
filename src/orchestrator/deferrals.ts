/**
 * Deferred steps during an apply (issue 18, "Sites that answer"): a site that did not answer gave
 * its slot back, and waits here, on a timer, until its next try is due; then it is handed back to
 * its stage's window, where it waits for a slot (and for a pause to end) as a new subcloud does.
 * The rules (try again or fail, when) are domain/deferral.ts's; what the file says of a deferred
 * step (its state, when it is due) is store/deferrals.ts's. The orchestrator's registry is never
 * seen here: a deferred step has no operation running.
 */
import { deadlineOf, decideDeferral, DEFAULT_DEFER_DELAY_MS, parseDeferUntil, type DeferralDecision } from '../domain/deferral.js';
import type { ExtraArgs } from '../domain/options.js';
import type { Db } from '../store/open.js';
import { deferralsOf, deferredRun, othersLeftInStage } from '../store/deferrals.js';
import type { CursorStep } from '../store/cursor.js';
import type { Timer } from '../platform/timers.js';
import type { TimeSource } from '../platform/runtime.js';

export class Deferrals {
  private readonly timers = new Map<number, Timer>();
  /** Steps whose wait here has run out: tried now, whatever the stored due time says. */
  private readonly waited = new Set<number>();
  /** Decided and not yet committed: when each one's next try is due. */
  private readonly decided = new Map<number, number>();
  private readonly delayMs: number;
  private readonly deadlineMs: number | null;

  constructor(
    private readonly db: Db,
    extra: ExtraArgs,
    startedMs: number,
    /** A deferred step's next try is due: hand it to its stage's window. */
    private readonly due: (step: CursorStep) => void,
    /** Due times are wall-clock times (stored, and shown); the waits for them are timers. */
    private readonly rt: TimeSource,
  ) {
    this.delayMs = typeof extra.defer_delay_ms === 'number' ? extra.defer_delay_ms : DEFAULT_DEFER_DELAY_MS;
    this.deadlineMs = typeof extra.defer_until === 'string' ? deadlineOf(parseDeferUntil(extra.defer_until), startedMs) : null;
  }

  /** Steps waiting for their next try in this process. */
  get waiting(): number {
    return this.timers.size;
  }

  /** A site did not answer in `state`: deferred again, or failed unreachable. */
  async decide(step: CursorStep, state: string, reason: string): Promise<DeferralDecision> {
    const d = decideDeferral({
      state,
      reason,
      nowMs: this.rt.clock.wall(),
      delayMs: this.delayMs,
      deadlineMs: this.deadlineMs,
      othersLeft: await othersLeftInStage(this.db, step.stage, step.id),
      deferrals: await deferralsOf(this.db, step.id),
    });
    if (d.kind === 'defer') this.decided.set(step.id, d.dueMs);
    return d;
  }

  /** The deferral of `step` is committed: it waits for its next try. */
  committed(step: CursorStep): void {
    const dueMs = this.decided.get(step.id) ?? this.rt.clock.wall() + this.delayMs;
    this.decided.delete(step.id);
    this.wait(step, dueMs);
  }

  /**
   * A deferred step read from the file (a resume): the state it is tried again in, and whether its
   * try is due now. Not due: it waits here, its slot free.
   */
  async resumeOf(step: CursorStep): Promise<{ state: string } | { waits: true } | null> {
    const run = await deferredRun(this.db, step.id);
    if (!run) return null;
    const nowMs = this.rt.clock.wall();
    const waitedOut = this.waited.delete(step.id);
    if (run.dueMs !== null && run.dueMs > nowMs && !waitedOut) {
      // Written as now + the delay by the process that deferred it: one due further ahead was
      // written by a clock ahead of this one, or before this host's clock stepped back (found by
      // the simulator, seed 2277234042: an hour's step back held the strategy an hour). No wait is
      // longer than one delay from now.
      this.wait(step, Math.min(run.dueMs, nowMs + this.delayMs));
      return { waits: true };
    }
    return { state: run.state };
  }

  /** Nothing more is tried in this run (an abort, a signal, the end): no timer is left. */
  clear(): void {
    for (const t of this.timers.values()) t.clear();
    this.timers.clear();
    this.decided.clear();
    this.waited.clear();
  }

  private wait(step: CursorStep, dueMs: number): void {
    this.timers.get(step.id)?.clear();
    this.waited.delete(step.id);
    const t = this.rt.timers.after(() => {
      this.timers.delete(step.id);
      this.waited.add(step.id);
      this.due(step);
    }, Math.max(0, dueMs - this.rt.clock.wall()));
    this.timers.set(step.id, t);
  }
}
