/**
 * The commit loop: drivers' reports and the transitions they call for are queued, and one flush
 * per turn of the event loop decides every queued report (decide.ts), applies the one stop rule to
 * the whole batch, commits it through the committer (one fenced transaction, one busy rule:
 * committer.ts) and only then lets the batch be seen and starts the operations it opened. A busy
 * store keeps everything queued and is tried again; nothing it holds has started.
 *
 * Owns: the queues (reports, transitions), the flush, the stop rule's application, the fence of
 * the orchestrator's transactions. Never touches: the registry's map (it asks the registry to
 * settle a report), the window's slots (it asks its host), timers other than its runtime's.
 */
import { stopRule, type Gate, type ReportResult } from '../domain/control.js';
import { STEP_DEFERRED, type DeferralDecision } from '../domain/deferral.js';
import { leavesFlight, type Transition } from '../domain/transition.js';
import type { CursorStep } from '../store/cursor.js';
import type { Db } from '../store/open.js';
import { now, timeAt } from '../store/clock.js';
import { recordRunDetails, recordRunProcesses } from '../store/runs.js';
import type { Refusal } from '../store/workers.js';
import type { ProgressSink } from './progress.js';
import { Committer, BUSY_RETRY_MS, StopInFile } from './committer.js';
import { startCheck } from './start-check.js';
import { markLateStart, stateAndRateAtBegin } from '../store/start-rate.js';
import { decideRun, type DecideContext, type Decided, type Report } from './decide.js';
import type { Fleet } from './fleet.js';
import type { Registry, Worker } from './registry.js';
import { RunProcesses } from './run-processes.js';
import { RunDetails } from './run-details.js';
import { firstStartsOf, resumedStep, StartPacer } from './pacer.js';
import type { Runtime } from './runtime.js';
import { sleepOn } from '../platform/timers.js';

/** What deciding a report needs; a deferral's verdict reads the store, before the decision. */
export type LoopDecideContext = Omit<DecideContext, 'deferral'> & {
  deferral(w: Worker, reason: string): Promise<DeferralDecision>;
};

/** How long, after a second Ctrl-C, the answers already received wait for a busy store. */
export const FINAL_FLUSH_MS = 10_000;

/** A subcloud's place in its stage's window, as the commit loop sees it. */
export interface SlotView {
  step: CursorStep;
  /** Its first operation was committed: from then on it is in flight and runs to its end. */
  started: boolean;
}

/** What the commit loop asks of the rest of the orchestrator. */
export interface CommitHost {
  slot(stepId: number): SlotView;
  gate(): Gate;
  /** The subcloud gives its slot back: ended, or held back before it started. */
  release(stepId: number, ended: boolean): void;
  /** These subclouds end in the commit being made: their slots go to the next, started in it too. Returns how many. */
  lend(stepIds: readonly number[]): number;
  /** A claim was refused (one of several workers). */
  refused(stepId: number, why: Refusal): void;
  /** A committed transition closed a run (the observer's end of it). */
  closed?(t: Transition): void;
  /**
   * A committed transition opened an operation (or a retry after its backoff); `out`: its subcloud
   * was found taken out (unmanaged, offline) in that commit, and the operation is not started.
   */
  start(step: CursorStep, state: string, attempt: number, historyId: number, out?: string): void;
  retryLater(step: CursorStep, state: string, delayMs: number): void;
  /** A deferral committed: the step waits for its next try, apart (`details`: why, and when). */
  deferred(step: CursorStep, details: string): void;
  /** What the report of `w`'s run, decided, counts toward (failures, retries, a run cut off). */
  decided(d: Decided, w: Worker): void;
  /** A stop committed in the store that this process has not seen yet: look now. */
  lookNow(): Promise<boolean>;
  /** The host name recorded with each run's process. */
  host: string;
  fail(err: Error): void;
  /** True once the orchestrator has stopped or failed: nothing more is decided. */
  done(): boolean;
  /** A signal is being answered (its processes are recorded without waiting). */
  interrupted(): boolean;
}

/** How long a server's commit waits for more answers to go with it. */
const GATHER_MS = 2;

export class CommitLoop {
  readonly committer: Committer;
  readonly procs: RunProcesses;
  readonly details: RunDetails;
  private pending: Transition[] = [];
  /** The batch out to the store now: still queued to whoever asks (a server may make it wait). */
  private committing: Transition[] = [];
  /** The queue's filters applied while a batch was out: applied to it too, should it come back. */
  private filteredMeanwhile: ((t: Transition) => boolean)[] = [];
  private reports: Report[] = [];
  private flushScheduled = false;
  /**
   * The flush under way, if any: flushes take turns, as they did when a commit could not be
   * interrupted. A commit on a server gives the event loop back while the server answers; a report
   * or a signal meanwhile waits for this flush to end before the next one decides anything.
   */
  private flushing: Promise<void> | null = null;
  /** The decision's context for a report that is not a deferral. */
  private readonly noDeferral: DecideContext;
  /** The start rate (pacer.ts): the window asks it, each commit's own check lets it decide. */
  readonly pacer: StartPacer;

  constructor(
    private readonly rt: Runtime,
    private readonly registry: Registry,
    private readonly fleet: Fleet,
    private readonly host: CommitHost,
    private readonly decideCtx: LoopDecideContext,
    private readonly progress: ProgressSink,
    type: string,
    outerFence: ((tx: Db) => Promise<void>) | undefined,
  ) {
    this.noDeferral = {
      ...decideCtx,
      deferral: () => {
        throw new Error('a deferral decided with no verdict read');
      },
    };
    this.pacer = new StartPacer(rt, () => this.schedule(), () => this.fleet.leaseMs);
    this.committer = new Committer(rt.db, type, outerFence ?? (async () => {}), (t) => progress.warn(t), rt.hooks, rt.counters, rt, (tx, written) => this.pacer.written(tx, written));
    this.procs = new RunProcesses(() => this.schedule(), rt.timers);
    this.details = new RunDetails(() => this.schedule(), rt.clock.mono, rt.timers);
  }

  /** A transition to commit with the next batch. */
  queue(t: Transition): void {
    this.pending.push(t);
    this.schedule();
  }

  /** Whether a transition of `stepId` waits to be committed. */
  queued(stepId: number): boolean {
    return this.pending.some((p) => p.stepId === stepId) || this.committing.some((p) => p.stepId === stepId);
  }

  /** Drop the queued transitions `keep` refuses (a smaller window, a takeover). */
  filter(keep: (t: Transition) => boolean): void {
    this.pending = this.pending.filter(keep);
    if (this.committing.length) this.filteredMeanwhile.push(keep);
  }

  /** A driver's answer arrives here and nowhere else. */
  report(stepId: number, opId: number, result: ReportResult): void {
    if (this.host.done()) return;
    // A run that ended before its answer came (adopted, it ended while no dcm ran) ends when it did.
    // Wall-clock times: a run's length is shown and kept, and an adopted run's start is its history's.
    const nowMs = this.rt.clock.wall();
    const ended = result.endedAtMs;
    const at = ended !== undefined && ended < nowMs ? ended : null;
    this.reports.push({ stepId, opId, result, finishedAt: at === null ? now(this.rt.db) : timeAt(at), finishedMs: at ?? nowMs });
    this.schedule();
  }

  schedule(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // On a server (several workers) the answers of a few milliseconds go in one commit: each commit
    // there is round trips, and the event loop, free while one is out, would otherwise commit the
    // answers as they trickle in, a handful at a time. A file's commit takes no turn of the loop.
    if (this.fleet.shared) this.rt.timers.after(() => void this.flush(), GATHER_MS);
    else this.rt.timers.soon(() => void this.flush());
  }

  private async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    this.flushScheduled = false;
    if (this.host.done()) return;
    const done = this.flushOnce();
    this.flushing = done;
    try {
      await done;
    } finally {
      if (this.flushing === done) this.flushing = null;
    }
  }

  /**
   * `fn` with no commit out meanwhile, and none begun before it ends: a server may make a commit
   * wait while the rest of the process goes on, and what `fn` changes of the queue and the slots (a
   * takeover's adopted runs) must be seen whole by the batch after it, not by one already out.
   */
  async between(fn: () => Promise<void>): Promise<void> {
    while (this.flushing) await this.flushing;
    const done = fn();
    const settled = done.then(
      () => {},
      () => {},
    );
    this.flushing = settled;
    try {
      await done;
    } finally {
      if (this.flushing === settled) this.flushing = null;
    }
  }

  /** No commit begins, and `between` waits, until the function returned is called (the orchestrator's start). */
  holdOff(): () => void {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    this.flushing = held;
    return () => {
      if (this.flushing === held) this.flushing = null;
      release();
    };
  }

  private async flushOnce(): Promise<void> {
    try {
      await this.decideReports();
      if (!await this.commitPending()) {
        // Another writer holds the store past the busy timeout: nothing was committed and nothing
        // it opens has started; it is all kept, and tried again shortly (under the stop rule anew).
        this.flushScheduled = true;
        this.rt.timers.after(() => void this.flush(), BUSY_RETRY_MS);
      }
    } catch (err) {
      this.host.fail(err as Error);
    }
  }

  /**
   * After a second Ctrl-C: what was answered is committed (the stop rule holds every start), for
   * at most FINAL_FLUSH_MS while the store stays busy. What is left is what a kill -9 leaves: runs
   * still `running` in the history, which the next apply adopts or runs again as its log says.
   */
  async finalFlush(signal: NodeJS.Signals): Promise<void> {
    while (this.flushing) await this.flushing;
    await this.decideReports();
    const giveUp = this.rt.clock.mono() + FINAL_FLUSH_MS;
    // The end's own write (finish.ts) and any other wait for the store keep the same bound.
    await this.committer.stopWaiting(giveUp, signal);
    while (this.pending.length || this.procs.waiting) {
      if (await this.commitPending()) return;
      if (this.rt.clock.mono() >= giveUp) {
        this.progress.warn(`the database stayed locked for ${FINAL_FLUSH_MS / 1000} s: ${this.pending.length} answer(s) not recorded; the next apply finds those runs as a kill would leave them`);
        return;
      }
      await sleepOn(this.rt.timers, BUSY_RETRY_MS);
    }
  }

  /** Turn each report into the transition it calls for; stale reports change nothing. */
  private async decideReports(): Promise<void> {
    const reports = this.reports;
    this.reports = [];
    // A site that did not answer: its deferral's verdict reads the store (the stage's others left,
    // the step's deferrals so far). Read first, so that every report is then settled and decided
    // at once, with nothing in between.
    const verdicts = new Map<Report, DeferralDecision>();
    for (const r of reports) {
      if (r.result.kind !== 'defer' || !this.registry.current(r.stepId, r.opId)) continue;
      verdicts.set(r, await this.decideCtx.deferral(this.registry.get(r.stepId)!, r.result.reason));
    }
    for (const r of reports) {
      const w = this.registry.settle(r.stepId, r.opId);
      if (!w) continue; // answered after its timeout: the step moved on
      // A first start waited for that never began (refused, not started) holds the next no longer.
      this.pacer.ended(w.historyId);
      // Its run has ended: a progress line of it still waiting is never written.
      this.details.forget(r.stepId);
      const verdict = verdicts.get(r);
      const d = decideRun(w, r, verdict ? { ...this.decideCtx, deferral: () => verdict } : this.noDeferral);
      this.pending.push(d.transition);
      this.host.decided(d, w);
    }
  }

  /**
   * The one commit path for transitions: the stop rule on the whole batch, one fenced commit with
   * the processes to record, then (only then) the starts it opened. False: the store was busy.
   */
  private async commitPending(lookAgain = true): Promise<boolean> {
    await this.lendEnding();
    const batch = this.applyStopRule(this.pending);
    this.pending = [];
    // A batch that opens a new subcloud reads the strategy's state inside its transaction: a
    // pause or an abort committed since the last poll stops it there, not up to a poll later.
    const { opensNew, firstStarts, stage } = firstStartsOf(batch, (id) => this.host.slot(id));
    const procs = this.procs.list;
    const alone = batch.length === 0;
    const procsDue = this.procs.overdue || (this.procs.waiting && this.host.interrupted());
    // A first start's beginning (later than its commit, or held for the other workers until it
    // began) is written at once: the other workers space their next start from it (pacer.ts).
    const late = this.pacer.lateStart;
    if (alone && !procsDue && !late && !this.details.overdue) return true;
    // Progress lines ride along (a second after their subcloud's last); only runs still in flight.
    const lines = this.details.take((stepId, opId) => this.registry.current(stepId, opId));
    if (alone && !procsDue && !late && lines.length === 0) return true;
    const rows = lines.map((l) => {
      const w = this.registry.get(l.stepId)!;
      return { stepId: l.stepId, state: w.state, historyId: w.historyId, text: l.text };
    });
    let written = 0;
    const also =
      procs.length || rows.length || late
        ? async (tx: Db) => {
            if (procs.length) await recordRunProcesses(tx, procs, this.host.host);
            if (rows.length) written = await recordRunDetails(tx, rows);
            if (late) await markLateStart(tx, late.stage, late.at, late.held);
          }
        : undefined;
    let committed = false;
    /** Those the start rate left out of this commit: they go back to their place. */
    const paced: { left: ReadonlySet<number> } = { left: new Set() };
    try {
      this.procs.stop();
      // One of several workers claims each subcloud in the commit of its first operation here.
      const claiming = this.fleet.asking(batch, (id) => this.host.slot(id).step);
      // The strategy's look that a batch opening new subclouds makes is read with its BEGIN.
      stateAndRateAtBegin(this.rt.db, opensNew ? stage : null);
      this.committing = batch;
      try {
        await this.committer.tryCommit(batch, also, startCheck(this.pacer, this.fleet, { opensNew, claiming, firstStarts, stage }, paced));
        committed = true;
        this.filteredMeanwhile = [];
      } finally {
        this.pacer.settle(committed);
        this.committing = [];
      }
    } catch (err) {
      this.fleet.settle(false);
      if (err instanceof StopInFile) {
        // Nothing was written: the stop is carried out now (its handler runs), and the batch is
        // tried once more under the stop rule anew, its new subclouds held back. Should the stop's
        // own write find the store busy, the batch waits like a busy one.
        this.pending = this.backFrom(batch).concat(this.pending);
        if (!lookAgain || !await this.host.lookNow()) return false;
        return await this.commitPending(false);
      }
      if (!this.committer.isBusy(err)) throw err;
      this.pending = this.backFrom(batch).concat(this.pending);
      return false;
    }
    // The subclouds whose claim was refused were left out of the commit; they are let go of
    // (another worker has one, or the stage's window is full across the workers: it waits in its place).
    const refusals = this.fleet.settle(committed);
    // Those the start rate left out go back to their place in the window, not started.
    const rateLeft = paced.left;
    for (const id of rateLeft) this.host.release(id, false);
    if (procs.length) this.procs.recorded();
    if (late) this.pacer.lateWritten(late);
    if (lines.length) {
      this.details.committed(lines, alone && !procsDue);
      if (this.rt.counters) this.rt.counters.details += written;
    }
    const left = refusals.size || rateLeft.size ? batch.filter((t) => !refusals.has(t.stepId) && !rateLeft.has(t.stepId)) : batch;
    return this.committed(lines, left, refusals);
  }

  /**
   * The subclouds that end in this commit lend their slots to the next ones waiting, whose first
   * starts are queued (their tasks take a turn of the event loop) and so go in the same commit:
   * a refill no longer waits for the end's commit and then for one of its own (issue 51). Only
   * what may start now is let in: the stop rule and the claims judge the batch after this.
   */
  private async lendEnding(): Promise<void> {
    if (!this.host.gate().newSubclouds) return;
    const ending = this.pending.filter((t) => leavesFlight(t) && this.host.slot(t.stepId)?.started);
    if (ending.length === 0 || this.host.lend(ending.map((t) => t.stepId)) === 0) return;
    await new Promise<void>((resolve) => this.rt.timers.soon(resolve));
  }

  /**
   * A batch the store did not take, queued again as if it had waited in the queue: what was
   * dropped from the queue while the store made it wait (a smaller window, a takeover) is dropped
   * from it too. (Anything of the process may run while a server makes a commit wait.)
   */
  private backFrom(batch: Transition[]): Transition[] {
    const filters = this.filteredMeanwhile;
    this.filteredMeanwhile = [];
    return filters.reduce((kept, keep) => kept.filter(keep), batch);
  }

  /** Committed: now it may be seen, and the operations it opened may start. */
  private committed(lines: { stepId: number; text: string }[], batch: Transition[], refusals: Map<number, Refusal>): true {
    for (const l of lines) this.progress.details?.(this.registry.get(l.stepId)!.step.cloud, l.text);
    for (const [stepId, why] of refusals) this.host.refused(stepId, why);
    for (const t of batch) {
      const slot = this.host.slot(t.stepId);
      slot.started = true;
      if (t.close) this.host.closed?.(t);
      this.progress.transition({
        at: now(this.rt.db),
        cloud: t.cloud,
        from: t.from,
        to: t.to,
        details: t.details,
        attempt: t.startAttempt,
        stage: slot.step.stage,
        durationMs: t.close?.durationMs,
        ended: t.ended,
      });
      slot.step.state = t.to;
      if (t.startAttempt !== undefined) this.host.start(slot.step, t.to, t.startAttempt, t.historyId!, t.siteOut);
      else if (t.retryInMs !== undefined) this.host.retryLater(slot.step, t.to, t.retryInMs);
      else {
        this.host.release(t.stepId, true);
        // Its slot is free for the next site: it waits for its next try, apart.
        if (t.to === STEP_DEFERRED) this.host.deferred(slot.step, t.details);
      }
    }
    return true;
  }

  /**
   * The one stop rule (domain/control.ts `stopRule`), applied to every batch at every attempt to
   * commit it: once a stop is decided, nothing starts, whatever batch or queue it was in. A first
   * start held back gives its slot back (its window keeps its place); a start stripped from a
   * transition leaves the step mid-state for `apply` to resume.
   */
  private applyStopRule(batch: Transition[]): Transition[] {
    const g = this.host.gate();
    if (g.newSubclouds && g.operations) return batch;
    const out: Transition[] = [];
    for (const t of batch) {
      const slot = this.host.slot(t.stepId);
      const verdict = stopRule(t, g, { started: slot.started, resumed: resumedStep(slot.step) });
      if (verdict === 'keep') out.push(t);
      else if (verdict === 'hold') this.host.release(t.stepId, slot.started);
      else {
        // It moves and closes its run, but opens nothing: released once committed.
        t.startAttempt = undefined;
        t.retryInMs = undefined;
        if (t.close) t.close.retryAt = undefined;
        out.push(t);
      }
    }
    return out;
  }
}
