/**
 * The start rate (`--start-rate N/min --ramp F --ramp-after K`; domain/start-rate.ts) as the
 * orchestrator holds it. Two parts:
 *
 * - The store decides. The commit that opens new subclouds reads the stage's rate and its last
 *   start in its own transaction (store/start-rate.ts), lets at most one of them start when the
 *   rate's spacing has passed since the last start, leaves the others out of the commit (they go
 *   back to their place in the window), and moves the last start to the one it made. Every
 *   worker's commit holds the store's writer lock, so the rate holds across the workers of a
 *   strategy, and an update of the rate counts from the first commit after it.
 * - The window is told in advance. A subcloud about to take a slot for its first state asks `pace`:
 *   until the wait the store last answered is over it waits at the gate, in its place, and the
 *   window looks again then. So a window of 500 does not send 500 starts to a commit that takes one.
 * - A start is counted where the site sees it. With a driver that reports when a run began
 *   (`reportsStarts`: the exec launcher's claim on a server is tried again while the server cannot
 *   be reached, and may start the run a second or more after its commit), the next first start
 *   waits until the last one began, and the spacing counts from its beginning: the stage's last
 *   start moves to it in the next commit. Without that, a start that began late and the next one,
 *   on time, came sooner than the rate allows (a simulator's seed found it: issue 51, 2848171149).
 *   One of several workers holds the others too: its commit puts the stage's last start a lease
 *   ahead (`holdStageStart`), and the commit after the run began puts it back to the beginning.
 *   A worker that dies meanwhile holds them for its lease, as long as its takeover waits anyway.
 *
 * Owns: each stage's rate as this process last read it, the wait the store last answered, the last
 * first start made here until it began, and a late beginning until written. Never
 * touches: the slots, the registry, the commit (it only answers inside the commit's fence).
 */
import { opensNewSubcloud } from '../domain/control.js';
import { STEP_DEFERRED } from '../domain/deferral.js';
import { rateInForce, readStoredRate, startSpacingMs, nextStartWait, type StartRate } from '../domain/start-rate.js';
import type { Transition } from '../domain/transition.js';
import { parseTimestamp } from '../domain/time.js';
import { nowMicros, timeAt } from '../store/clock.js';
import type { CursorStep } from '../store/cursor.js';
import type { Db } from '../store/open.js';
import { completeSteps, holdStageStart, markStageStart } from '../store/start-rate.js';
import type { ProgressSink } from './progress.js';
import type { Runtime } from './runtime.js';

/**
 * Added to the spacing when the store decides: two processes on one host read the wall clock
 * through their own monotonic origins, which may disagree by a fraction of a millisecond.
 */
const CLOCK_MARGIN_MS = 2;

/**
 * How long a first start is waited for before the next may be asked for anyway: the exec
 * launcher tries its claim for a minute (drivers/exec/launcher.ts), and a run whose answer came
 * without a start (refused, not started) ends the wait at once.
 */
const BEGIN_WAIT_MS = 60_000;

/**
 * A first start's beginning, for the stage's last start (as the store writes times): it began later
 * than its commit wrote, or was held for the others until it began (`held`: the time written then).
 */
export interface LateStart {
  stage: number;
  at: string;
  held: string | null;
}

/** A first start this process committed whose run has not yet begun at its site. */
interface Awaited {
  stage: number;
  historyId: number;
  perMin: number;
  /** When its commit wrote it, on the store's clock (ms). */
  writtenMs: number;
  /** One of several workers: the stage's last start as its commit held it for the others. */
  held: string | null;
  /** When the wait for it began, on the runtime's monotonic clock. */
  sinceMono: number;
}

/** What the last commit's check found: the rate in force and how long the next start waits. */
export interface RateAnswer {
  stage: number;
  perMin: number;
  completed: number;
  waitMs: number;
}

export class StartPacer {
  /** Each stage's rate as last read (absent or null: none). */
  private readonly rates = new Map<number, StartRate | null>();
  /** On the runtime's clock: no first start is asked for before it. */
  private dueMs = 0;
  /** The commit being made: the start it lets through (its history row once written) and what it found. */
  private made: { stage: number; stepId: number; historyId?: number; writtenMs?: number; held?: string | null } | null = null;
  private answer: RateAnswer | null = null;
  /** The rate in force last found, by stage (for the views). */
  private readonly inForce = new Map<number, number>();
  /** Told when the rate in force of a stage changes (the views show it). */
  onRate: ((stage: number, perMin: number | null, rate: StartRate | null) => void) | null = null;
  /** The last first start made here, until its run began at its site (or its answer came). */
  private awaited: Awaited | null = null;
  /** A first start that began later than its commit: the stage's last start moves to it with the next commit. */
  private late: LateStart | null = null;
  /** The window looks again: a first start waited for began, or will not. */
  wake: () => void = () => {};

  /**
   * `due`: a beginning is to be written now (the commit loop schedules a commit); `leaseMs`: one
   * of several workers, its lease (null: the one orchestrator of a file, which holds nobody).
   */
  constructor(
    private readonly rt: Runtime,
    private readonly due: () => void = () => {},
    private readonly leaseMs: () => number | null = () => null,
  ) {}

  /** The rates as the store holds them (the run's start, and each change another shell made). */
  setRate(stage: number, stored: string | null): void {
    const r = readStoredRate(stored);
    this.rates.set(stage, r);
    // A rate changed or removed: the wait computed under the old one no longer holds.
    this.dueMs = 0;
    const perMin = r ? rateInForce(r, 0) : null;
    if (!r) this.inForce.delete(stage);
    this.onRate?.(stage, r ? (this.inForce.get(stage) ?? perMin) : null, r);
  }

  /** The run's start: the rates as the store holds them, and the views told of each change. */
  begin(rates: ReadonlyMap<number, string | null>, progress: ProgressSink): void {
    this.onRate = (stage, perMin, rate) => progress.rateChanged?.(stage, perMin, rate);
    for (const [stage, rate] of rates) if (rate !== null) this.setRate(stage, rate);
  }

  /** A rate changed from another shell: the next start waits the new spacing from the last one (the store decides). */
  changed(stage: number, stored: string | null, pump: () => void): void {
    this.setRate(stage, stored);
    pump();
  }

  /** Whether any stage has a rate as last read. */
  get active(): boolean {
    for (const r of this.rates.values()) if (r) return true;
    return false;
  }

  /** The rate in force of `stage` as last found (null: none). */
  perMin(stage: number): number | null {
    const r = this.rates.get(stage);
    if (!r) return null;
    return this.inForce.get(stage) ?? rateInForce(r, 0);
  }

  /**
   * A subcloud of `stage` is about to take a slot for its first state: null when it may ask the
   * store now (the next one then waits the spacing), else how long to wait first.
   */
  pace(stage: number): number | null {
    const perMin = this.perMin(stage);
    if (perMin === null) return null;
    const now = this.rt.clock.mono();
    const a = this.awaited;
    if (a && now - a.sinceMono >= BEGIN_WAIT_MS) this.awaited = null;
    // The last start has not begun at its site yet: looked at again when it has (`begun`).
    else if (a) return Math.max(1, startSpacingMs(perMin));
    if (now < this.dueMs) return this.dueMs - now;
    this.dueMs = now + startSpacingMs(perMin);
    return null;
  }

  /**
   * Inside the commit that opens new subclouds of `stage`, with the stage's rate and last start as
   * the commit read them: how many of them may start now (Infinity when the stage has no rate).
   */
  async allowance(tx: Db, stage: number, stored: string | null, lastAt: string | null): Promise<number> {
    this.made = null;
    this.answer = null;
    const r = readStoredRate(stored);
    if (!r) {
      if (this.rates.get(stage)) this.setRate(stage, null);
      return Infinity;
    }
    if (!this.rates.get(stage)) this.rates.set(stage, r);
    const completed = r.after !== null && r.factor !== 1 ? await completeSteps(tx) : 0;
    const perMin = rateInForce(r, completed);
    // The store's clock is the history's: the start this commit writes is stamped after this read.
    const nowMs = nowMicros(tx.clock) / 1000;
    // This worker's own hold, its start's beginning not written yet: counted from that beginning
    // (or, not begun yet, not asked for at all: looked at again once it has).
    const own = lastAt !== null && this.late?.held === lastAt ? this.late.at : lastAt;
    if (own !== null && own === this.awaited?.held) {
      this.answer = { stage, perMin, completed, waitMs: startSpacingMs(perMin) };
      return 0;
    }
    const lastMs = own === null ? null : parseTimestamp(own) / 1000;
    const wait = lastMs === null ? 0 : nextStartWait(perMin, lastMs + CLOCK_MARGIN_MS, nowMs);
    // A last start ahead of now is another worker's hold (its start not begun yet): it is put back
    // once that start began, so this worker looks again a spacing later, not at the hold's end.
    this.answer = { stage, perMin, completed, waitMs: lastMs !== null && lastMs > nowMs ? Math.min(wait, startSpacingMs(perMin)) : wait };
    return wait === 0 ? 1 : 0;
  }

  /**
   * Which first starts the commit makes, the rest left out: the first `allowed` of those not
   * `refused` already (claims another worker won, or the claim's own limit). The one made moves
   * the stage's last start once written; the next start then waits the rate's spacing.
   */
  pick(firstStarts: readonly Transition[], refused: ReadonlySet<number>, allowed = 1): Set<number> {
    const a = this.answer;
    const left = new Set<number>();
    for (const t of firstStarts) {
      if (refused.has(t.stepId)) continue;
      if (a && allowed > 0 && this.made === null) {
        this.made = { stage: a.stage, stepId: t.stepId };
        allowed--;
      } else left.add(t.stepId);
    }
    if (a && this.made) a.waitMs = startSpacingMs(a.perMin) + CLOCK_MARGIN_MS;
    return left;
  }

  /** After the commit's writes, in its transaction: the stage's last start is the one it made. */
  async written(tx: Db, batch: readonly Transition[]): Promise<void> {
    const made = this.made;
    if (!made) return;
    const t = batch.find((x) => x.stepId === made.stepId);
    if (t?.historyId === undefined) return;
    const lease = this.rt.driver.reportsStarts ? this.leaseMs() : null;
    made.historyId = t.historyId;
    made.writtenMs = tx.clock.wall();
    made.held = lease === null ? null : timeAt(made.writtenMs + lease);
    if (made.held === null) await markStageStart(tx, made.stage, [t.historyId]);
    else await holdStageStart(tx, made.stage, made.held);
  }

  /** A late beginning waiting to be written: the next commit writes it (commit-loop.ts) and says so once committed (`lateWritten`). */
  get lateStart(): LateStart | null {
    return this.late;
  }

  /** The commit that wrote `late` committed: written, unless a later one came meanwhile. */
  lateWritten(late: LateStart): void {
    if (this.late === late) this.late = null;
  }

  /**
   * The run of `historyId` began at its site. The last first start made here: the next one may be
   * asked for, spaced from now if the run began later than its commit wrote.
   */
  begun(historyId: number): void {
    const a = this.awaited;
    if (!a || a.historyId !== historyId) return;
    this.awaited = null;
    const atMs = this.rt.db.clock.wall();
    const late = atMs - a.writtenMs > CLOCK_MARGIN_MS;
    if (late) this.dueMs = Math.max(this.dueMs, this.rt.clock.mono() + startSpacingMs(a.perMin) + CLOCK_MARGIN_MS);
    if (late || a.held !== null) {
      this.late = { stage: a.stage, at: timeAt(late ? atMs : a.writtenMs), held: a.held };
      this.due();
    }
    this.wake();
  }

  /** The run of `historyId` was answered: if it was the start waited for and never began, the wait is over. */
  ended(historyId: number): void {
    const a = this.awaited;
    if (a?.historyId !== historyId) return;
    this.awaited = null;
    // The others held for it stop waiting: the stage's last start is its commit's again.
    if (a.held !== null) {
      this.late = { stage: a.stage, at: timeAt(a.writtenMs), held: a.held };
      this.due();
    }
    this.wake();
  }

  /** The commit is over: committed, the next start waits what the store said. */
  settle(committed: boolean): void {
    const a = this.answer;
    const made = this.made;
    this.made = null;
    this.answer = null;
    if (!committed || !a) return;
    this.dueMs = this.rt.clock.mono() + a.waitMs;
    if (made?.historyId !== undefined && this.rt.driver.reportsStarts) {
      this.awaited = { stage: made.stage, historyId: made.historyId, perMin: a.perMin, writtenMs: made.writtenMs!, held: made.held ?? null, sinceMono: this.rt.clock.mono() };
    }
    if (this.inForce.get(a.stage) !== a.perMin) {
      this.inForce.set(a.stage, a.perMin);
      this.onRate?.(a.stage, a.perMin, this.rates.get(a.stage) ?? null);
    }
  }
}

/** A step caught mid-state by an earlier apply (not one `strategy retry` reset): resumed, not new. */
export function resumedStep(step: CursorStep): boolean {
  return step.state !== 'initial' && step.state !== STEP_DEFERRED && !step.retried;
}

/**
 * The transitions of a batch that open a new subcloud (a commit that has any reads the strategy's
 * state in its fence), and of those, the ones the start rate spaces: the operations started now of
 * one stage, the running one (a batch holds no other), with that stage.
 */
export function firstStartsOf(
  batch: readonly Transition[],
  slot: (stepId: number) => { step: CursorStep; started: boolean },
): { opensNew: boolean; firstStarts: Transition[]; stage: number } {
  const opening = batch.filter((t) => {
    const s = slot(t.stepId);
    return opensNewSubcloud(t, { started: s.started, resumed: resumedStep(s.step) });
  });
  if (!opening.length) return { opensNew: false, firstStarts: [], stage: 0 };
  const stage = slot(opening[0].stepId).step.stage;
  // A retry after its backoff keeps its slot and starts nothing now: it is no start of the rate. Nor
  // is a deferred step's next try (it started its first state already): the window does not pace
  // it (window.ts), and a commit that left it out would have it back at once, again and again.
  return {
    opensNew: true,
    firstStarts: opening.filter((t) => t.startAttempt !== undefined && slot(t.stepId).step.stage === stage && slot(t.stepId).step.state !== 'deferred'),
    stage,
  };
}
