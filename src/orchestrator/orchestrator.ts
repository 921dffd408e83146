/**
 * The apply loop (SPEC §1, §6). It alone owns the registry of running workers: it adds an entry
 * when it starts a state operation, and it alone removes or replaces it when it has committed how
 * that operation ended. A driver only performs the operation and reports; a report that does not
 * match the registry's entry (a late answer after a timeout) changes nothing.
 *
 * Flow, all event-driven: reports are queued; one flush per event-loop turn decides every queued
 * report (what a report means is decided in src/domain/control.ts), commits all the resulting
 * transitions in one transaction (durable before visible), then starts the operations those
 * transitions opened. The concerns around it live beside this file, and none of them sees the
 * registry: each stage's window (window.ts, fed from the file by a cursor), the deadlines
 * (deadlines.ts), the requests from other shells (requests.ts: abort, pause, window and budget
 * changes), the processes runs started (run-processes.ts) and finishing (finish.ts). A subcloud
 * holds its slot from its first state to its end, and stage N+1 starts when every subcloud of
 * stage N has ended.
 */
import { formatDuration } from '../domain/durations.js';
import { decideReport, failureLimit, type ReportResult } from '../domain/control.js';
import { TYPES, type StrategyType } from '../domain/types.js';
import type { Driver, OperationRequest, OperationResult } from '../drivers/driver.js';
import { interruptedLast, leftRunning, recordRunProcesses, subcloudPlaceholders } from '../store/runs.js';
import type { ExtraArgs } from '../domain/options.js';
import { now } from '../store/clock.js';
import type { Db } from '../store/open.js';
import { casStrategyState, controlSnapshot } from '../store/strategy.js';
import { abortInitialSteps, interruptRuns, TransitionWriter, type Transition } from '../store/transitions.js';
import { attemptsOf, failedAndTotal, openStages, StageCursor, stepsByIds, type CursorStep } from '../store/cursor.js';
import { applyFaultError, faultOf } from '../store/faults.js';
import { ConfigBook } from '../domain/strategy-config.js';
import { getDefaultConfig, subcloudOptions } from '../store/strategy-config.js';
import type { ApplyInfo, ProgressSink } from './progress.js';
import { stageStateCounts } from '../store/status.js';
import { finishRun } from './finish.js';
import { RunProcesses } from './run-processes.js';
import { Deadlines } from './deadlines.js';
import { ExternalRequests } from './requests.js';
import { StageWindow, type Gate } from './window.js';
import { setLongTimeout, type Timer } from '../platform/timers.js';

export interface OrchestratorOptions {
  type: StrategyType;
  states: readonly string[];
  /** `--stop-on-failure`: a failure budget of 1 when the strategy has none of its own. */
  stopOnFailure: boolean;
  campaign: string;
  extra: ExtraArgs;
  stateTimeoutMs: number;
  /** How often external changes (abort, pause, window, from another shell) are looked for. */
  pollMs?: number;
  /** How long a first Ctrl-C waits for the operations in flight. */
  drainMs?: number;
  /**
   * The fence (SPEC §2.1): runs first in every transaction this orchestrator makes and throws once
   * another process holds the apply lock, so a displaced orchestrator writes nothing more.
   */
  fence?: () => void;
  /** Throws when the path no longer names the file that is open (removed or replaced); polled. */
  checkFile?: () => void;
  /** The path, for the messages of file faults. */
  file?: string;
}

/** How often a busy file (another writer holding it past the busy timeout) is tried again. */
const BUSY_RETRY_MS = 250;


/** One entry of the registry: the operation running for a subcloud, tagged with its state. */
interface Worker {
  step: CursorStep;
  state: string;
  attempt: number;
  historyId: number;
  opId: number;
  /** Made only when the driver asks for the signal: most operations never need one. */
  controller: AbortController | null;
  /** The orchestrator stopped waiting (timeout, hard stop): a signal asked for later is aborted. */
  abandoned: boolean;
  /** When the operation started (epoch ms): its duration goes to the statistics and the progress. */
  startedMs: number;
}

interface Report {
  stepId: number;
  opId: number;
  result: ReportResult;
  finishedAt: string;
  finishedMs: number;
}

/** A subcloud holding a slot of its stage's window, from its first state to its end. */
interface Slot {
  step: CursorStep;
  /** True: it ended; false: it was held back before its first state started. */
  release: (ended: boolean) => void;
  /** Its first operation was committed: from then on it is in flight and runs to its end. */
  started: boolean;
}

export class Orchestrator {
  /** The registry (SPEC §1): created, read and changed here only. Never handed to anyone. */
  private readonly workers = new Map<number, Worker>();
  private readonly slots = new Map<number, Slot>();
  private readonly writer: TransitionWriter;
  private pending: Transition[] = [];
  private reports: Report[] = [];
  private flushScheduled = false;
  private nextOpId = 1;
  private attemptsOf: (stepId: number, state: string) => number = () => 0;
  /** (step, state) whose last run was cut off: its next run is told so (DCM_RESUMED). */
  private resumed = new Set<string>();
  /** Runs of a (step, state) that failed or timed out in this process: the driver's retry budget. */
  private failures = new Map<string, number>();
  /** Runs an earlier orchestrator left going, adopted by the driver: waited for once their subcloud has its slot. */
  private adopted = new Map<number, { worker: Worker; result: Promise<OperationResult> }>();
  /** Retries waiting out their backoff: the subcloud keeps its slot meanwhile. */
  private retryTimers = new Set<Timer>();
  /** Processes started and not yet recorded in their history rows (run-processes.ts). */
  private readonly procs = new RunProcesses(() => this.scheduleFlush());

  /** Abort, a signal or a fatal error: no subcloud starts any more (only ever switches on). */
  private noNewSubclouds = false;
  /** A signal: no operation starts any more, not even the next state of one in flight. */
  private noNewOperations = false;
  /** `strategy pause`: no new subcloud starts until `resume`; switches both ways. */
  private paused = false;
  private aborting = false;
  private failedSeen = false;
  /** Steps failed so far, and the budget (SPEC §4): no new subcloud once it is reached. */
  private failedCount = 0;
  private totalSteps = 0;
  private budgetText: string | null = null;
  private failureLimit: number | null = null;
  private interruptedBy: NodeJS.Signals | null = null;
  private hardStop: (() => void) | null = null;
  private drainTimer: Timer | null = null;
  /** Set once run() is done: a late answer or a queued flush must change nothing any more. */
  private stopped = false;
  private fatal: Error | null = null;
  private peak = 0;
  /** The largest window of a stage in which a subcloud started (for the summary). */
  private maxWindow = 0;
  private busySaid = false;
  private readonly deadlines: Deadlines;
  private requests: ExternalRequests | null = null;
  /** The stage running now, its window, and every stage's window as the file says. */
  private stage: number | null = null;
  private window: StageWindow | null = null;
  private windows = new Map<number, number>();
  /** The strategy-config options of each subcloud, read once when the run starts. */
  private config = new ConfigBook(undefined, []);

  constructor(
    private readonly db: Db,
    private readonly driver: Driver,
    private readonly progress: ProgressSink,
    private readonly opts: OrchestratorOptions,
  ) {
    this.writer = new TransitionWriter(db, opts.type, () => this.fence());
    this.deadlines = new Deadlines(
      opts.stateTimeoutMs,
      (stepId, opId) => this.workers.get(stepId)?.opId === opId,
      (stepId, opId) => {
        this.abandon(this.workers.get(stepId)!);
        this.report(stepId, opId, { kind: 'timeout' });
      },
    );
  }

  private fence(): void {
    this.opts.fence?.();
  }

  /** One fenced read-modify-write: BEGIN IMMEDIATE, the fence, then `fn`. */
  private write<T>(fn: () => T): T {
    return this.db
      .transaction(() => {
        this.fence();
        return fn();
      })
      .immediate();
  }

  /**
   * A write that must happen (at start, at the end): while another writer holds the file past the
   * busy timeout, wait and try again rather than die of SQLITE_BUSY (SPEC §2.1).
   */
  private async untilNotBusy<T>(fn: () => T): Promise<T> {
    for (;;) {
      try {
        return fn();
      } catch (err) {
        if (faultOf(err) !== 'busy') throw err;
        this.sayBusy();
        await new Promise((r) => setTimeout(r, BUSY_RETRY_MS));
      }
    }
  }

  private sayBusy(): void {
    if (this.busySaid) return;
    this.busySaid = true;
    this.progress.warn('the database is locked by another process: waiting for it (nothing is lost meanwhile)');
  }

  /** Run the strategy (already `applying`, paused, or being resumed) to its end; returns the exit code. */
  async run(): Promise<number> {
    const started = Date.now();
    this.config = new ConfigBook(getDefaultConfig(this.db), subcloudOptions(this.db));
    const cutOff = this.adoptLeftRuns();
    await this.untilNotBusy(() =>
      this.write(() => {
        interruptRuns(this.db, cutOff, 'the orchestrator stopped while this operation ran');
      }),
    );
    this.attemptsOf = attemptsOf(this.db);
    this.resumed = interruptedLast(this.db);
    // Counts, not steps: the steps themselves are read a window at a time (store/cursor.ts).
    const { failed, total } = failedAndTotal(this.db);
    this.failedCount = failed;
    this.totalSteps = total;
    this.failedSeen = failed > 0;
    const snap = controlSnapshot(this.db)!;
    this.windows = new Map(snap.windows);
    this.setBudget(snap.maxFailures, false);
    this.progress.begin?.({
      type: this.opts.type,
      states: this.opts.states,
      stages: stageCounts(stageStateCounts(this.db), this.windows),
      startedMs: started,
      stateTimeoutMs: this.opts.stateTimeoutMs,
    });
    if (snap.state === 'abort requested' || snap.state === 'aborting') await this.untilNotBusy(() => this.beginAbort());
    if (snap.state === 'paused') this.setPaused(true);

    this.requests = new ExternalRequests(
      this.db,
      {
        abort: () => {
          if (!this.aborting) this.beginAbort();
        },
        pause: (on) => this.setPaused(on),
        window: (stage, w) => this.setWindow(stage, w),
        budget: (text) => this.setBudget(text, true),
        fail: (err) => this.fail(err),
      },
      { pollMs: this.opts.pollMs, checkFile: this.opts.checkFile },
      snap,
    );
    this.requests.start();
    const stopped = new Promise<void>((resolve) => (this.hardStop = resolve));
    try {
      await Promise.race([this.runStages(), stopped]);
      // Stopped without waiting (a second Ctrl-C): answers already received are still committed;
      // nothing new starts (noNewOperations). The operations still out run again on resume.
      if (this.interruptedBy && !this.fatal && (this.reports.length || this.pending.length || this.procs.waiting)) this.flush();
    } finally {
      // Every way out (end, signal, fatal error) leaves no timer that would keep the process alive.
      this.requests.stop();
      this.drainTimer?.clear();
      this.deadlines.stop();
      for (const t of this.retryTimers) t.clear();
      this.retryTimers.clear();
      this.procs.stop();
      this.stopped = true;
    }
    if (this.fatal) throw this.fatal;
    return await this.finish(started);
  }

  private async runStages(): Promise<void> {
    for (const stage of openStages(this.db)) {
      const size = this.windows.get(stage) ?? 1;
      this.stage = stage;
      this.progress.stageStarted?.(stage, size);
      const cursor = new StageCursor(this.db, stage);
      this.window = new StageWindow(size, {
        fetch: (limit) => cursor.next(limit),
        gate: () => this.gate(),
        run: (step) => this.runSubcloud(step),
      });
      await this.window.run();
      this.window = null;
      if (this.interruptedBy || this.fatal) return;
    }
  }

  /** What may start now (window.ts asks before every start). */
  private gate(): Gate {
    const budgetSpent = this.budgetSpent();
    return {
      newSubclouds: !this.paused && !this.noNewSubclouds && !budgetSpent && !this.fatal,
      resumed: !this.noNewOperations && !this.fatal,
      stopping: this.noNewSubclouds || this.noNewOperations || budgetSpent || this.fatal !== null,
    };
  }

  private budgetSpent(): boolean {
    return this.failureLimit !== null && this.failedCount >= this.failureLimit;
  }

  /** Resolves true when the subcloud has ended, false when it was held back before it started. */
  private runSubcloud(step: CursorStep): Promise<boolean> {
    return new Promise<boolean>((release) => {
      this.slots.set(step.id, { step, release, started: false });
      this.peak = Math.max(this.peak, this.slots.size);
      this.maxWindow = Math.max(this.maxWindow, this.window?.window ?? 0);
      const adopted = this.adopted.get(step.id);
      if (adopted) {
        // Still going (or ended while no dcm ran): wait for it, never start it again.
        this.adopted.delete(step.id);
        this.slots.get(step.id)!.started = true;
        adopted.worker.step = step;
        this.workers.set(step.id, adopted.worker);
        this.await(adopted.worker, adopted.result);
        return;
      }
      const first = step.state === 'initial' ? this.opts.states[0] : step.state;
      this.queue({
        stepId: step.id,
        subcloudId: step.subcloudId,
        cloud: step.cloud,
        from: step.state,
        to: first,
        details: '',
        startAttempt: this.nextAttempt(step.id, first),
        ended: false,
      });
    });
  }

  /**
   * Attempts already made come from the history (one indexed read per start, rather than a map of
   * every step's attempts held for the whole run); within one process a state starts at most once
   * per entry.
   */
  private nextAttempt(stepId: number, state: string): number {
    return this.attemptsOf(stepId, state) + 1;
  }

  private queue(t: Transition): void {
    this.pending.push(t);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  /** A driver's answer arrives here and nowhere else. */
  private report(stepId: number, opId: number, result: ReportResult): void {
    if (this.stopped) return;
    this.reports.push({ stepId, opId, result, finishedAt: now(), finishedMs: Date.now() });
    this.scheduleFlush();
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.fatal || this.stopped) return;
    try {
      this.decideReports();
      const batch = this.withoutHeldBack(this.pending);
      this.pending = [];
      if (batch.length === 0) {
        // Processes started since the last commit, with nothing else to commit: on their own.
        if (this.procs.overdue) this.commitWithProcs([]);
        return;
      }
      try {
        this.commitWithProcs(batch);
      } catch (err) {
        if (faultOf(err) !== 'busy') throw err;
        // Another writer holds the file past the busy timeout: nothing of the batch was committed
        // and nothing it opens has started; keep it, and try again shortly.
        for (const t of batch) t.historyId = undefined;
        this.pending = batch.concat(this.pending);
        this.sayBusy();
        this.flushScheduled = true;
        setTimeout(() => this.flush(), BUSY_RETRY_MS);
        return;
      }
      // Committed: now it may be seen, and the operations it opened may start.
      for (const t of batch) {
        const slot = this.slots.get(t.stepId)!;
        slot.started = true;
        this.progress.transition({
          at: now(),
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
        if (t.startAttempt !== undefined) this.start(slot.step, t.to, t.startAttempt, t.historyId!);
        else if (t.retryInMs !== undefined) this.retryLater(slot.step, t.to, t.retryInMs);
        else this.release(t.stepId, true);
      }
    } catch (err) {
      this.fail(err as Error);
    }
  }

  /**
   * First starts queued before a pause, an abort, a spent budget or a signal was noticed do not
   * happen: the subcloud stays as it is and gives its slot back, and its window keeps it for when
   * it opens again (a pause) or leaves it (the rest). A signal holds back every start.
   */
  private withoutHeldBack(batch: Transition[]): Transition[] {
    const gate = this.gate();
    if (gate.newSubclouds && gate.resumed) return batch;
    return batch.filter((t) => {
      if (t.close !== undefined) return true;
      const slot = this.slots.get(t.stepId)!;
      const resumed = slot.step.state !== 'initial' && !slot.step.retried;
      const held = this.noNewOperations || (!slot.started && !resumed && !gate.newSubclouds);
      // Not started: its window keeps it. Started (a signal holds its next state): it stops here.
      if (held) this.release(t.stepId, slot.started);
      return !held;
    });
  }

  /** Turn each report into the transition it calls for; stale reports change nothing. */
  private decideReports(): void {
    const reports = this.reports;
    this.reports = [];
    for (const r of reports) {
      const w = this.workers.get(r.stepId);
      if (!w || w.opId !== r.opId) continue; // answered after its timeout: the step moved on
      this.workers.delete(r.stepId);
      const { step, state } = w;
      const d = decideReport(state, this.opts.states, r.result, this.opts.stateTimeoutMs);
      const durationMs = r.finishedMs - w.startedMs;
      if (d.kind === 'again') {
        // The run is over without a result: its row closes, and the state runs again as a new
        // attempt once the backoff is over, through this same registry.
        const key = `${step.id}\u0000${state}`;
        if (d.outcome === 'interrupted') this.resumed.add(key);
        else this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
        this.pending.push({
          stepId: step.id,
          subcloudId: step.subcloudId,
          cloud: step.cloud,
          from: state,
          to: state,
          details: d.details,
          close: { historyId: w.historyId, outcome: d.outcome, finishedAt: r.finishedAt, details: d.reason },
          retryInMs: d.delayMs,
          ended: false,
        });
      } else if (d.kind === 'advance') {
        const startAttempt = d.ended || this.noNewOperations ? undefined : this.nextAttempt(step.id, d.to);
        this.pending.push({
          stepId: step.id,
          subcloudId: step.subcloudId,
          cloud: step.cloud,
          from: state,
          to: d.to,
          details: d.details,
          close: { historyId: w.historyId, outcome: 'ok', finishedAt: r.finishedAt, details: d.details, durationMs },
          startAttempt,
          // A custom type has no endpoint nor prestage status to bring up to date.
          completes: d.ended && this.opts.type !== 'custom' ? { endpoint: TYPES[this.opts.type].endpoint } : undefined,
          ended: d.ended,
        });
      } else {
        this.pending.push({
          stepId: step.id,
          subcloudId: step.subcloudId,
          cloud: step.cloud,
          from: state,
          to: 'failed',
          details: d.details,
          close: { historyId: w.historyId, outcome: d.outcome, finishedAt: r.finishedAt, details: d.reason, durationMs },
          ended: true,
        });
        this.failedSeen = true;
        // Counted when decided, so that starts queued in this very flush are held back (as
        // --stop-on-failure always did); the transition itself is committed with them.
        this.failedCount++;
        if (this.budgetSpent()) this.sayBudgetSpent(step.cloud);
      }
    }
  }

  private budgetSaid = false;
  private sayBudgetSpent(cloud: string): void {
    if (this.budgetSaid) return;
    this.budgetSaid = true;
    if (this.budgetText === null) this.progress.note(`${cloud} failed: stop on failure, no new subcloud will start`);
    else this.progress.note(`${cloud} failed: ${this.failureLimit} step(s) failed (--max-failures ${this.budgetText}), no new subcloud will start`);
  }

  /** Start one state operation: the registry gets its entry before the driver is called. */
  private start(step: CursorStep, state: string, attempt: number, historyId: number): void {
    const existing = this.workers.get(step.id);
    if (existing) {
      throw new Error(`internal: ${step.cloud} already runs ${existing.state}; refusing a second worker for ${state}`);
    }
    const opId = this.nextOpId++;
    const worker: Worker = { step, state, attempt, historyId, opId, controller: null, abandoned: false, startedMs: Date.now() };
    this.workers.set(step.id, worker);
    if (!this.driver.ownsTimeouts) this.deadlines.add(step.id, opId, this.workers.size);
    let running: Promise<OperationResult>;
    try {
      const req = this.request(worker);
      this.resumed.delete(`${step.id}\u0000${state}`);
      running = this.driver.run(req);
    } catch (err) {
      // A driver that throws instead of rejecting fails this operation, not the whole apply.
      running = Promise.reject(err);
    }
    this.await(worker, running);
  }

  /** The driver's answer, whatever it is, becomes a report for this worker. */
  private await(worker: Worker, result: Promise<OperationResult>): void {
    const { step, opId } = worker;
    result.then(
      (r) => this.report(step.id, opId, r),
      (err: Error) => {
        // The file under the driver (the sim's sites share it) is full, corrupt or gone: that is
        // not this subcloud's failure, and the apply cannot go on.
        const fault = applyFaultError(err, this.opts.file ?? 'the database');
        if (fault) this.fail(fault);
        else this.report(step.id, opId, { kind: 'failed', reason: (err && err.message) || String(err) });
      },
    );
  }

  private request(worker: Worker): OperationRequest {
    const { step, state, attempt, historyId } = worker;
    const key = `${step.id}\u0000${state}`;
    const fields = (s: CursorStep) => this.subcloudFields(s);
    return {
      cloud: step.cloud,
      type: this.opts.type,
      state,
      stateIndex: this.opts.states.indexOf(state),
      states: this.opts.states,
      attempt,
      resumed: this.resumed.has(key),
      failures: this.failures.get(key) ?? 0,
      stage: step.stage,
      campaign: this.opts.campaign,
      extra: this.opts.extra,
      options: this.config.optionsFor(step.subcloudId),
      // Read from the file only by a driver that asks (exec's placeholders): the sim never does.
      get subcloud() {
        return fields(step);
      },
      get signal() {
        if (!worker.controller) {
          worker.controller = new AbortController();
          if (worker.abandoned) worker.controller.abort();
        }
        return worker.controller.signal;
      },
      // Recorded by the next flush, in one transaction for all: until then the launcher's own pid
      // file beside the run's log tells a later apply where the run is.
      onStarted: (proc) => this.procs.add(historyId, proc),
    };
  }

  /**
   * Runs an earlier orchestrator left `running`: the driver says whether each is still going (or
   * ended and left its status), to be waited for, or was cut off, to run again as the next attempt.
   * Returns the history rows of the runs that were cut off, for the caller to mark `interrupted`
   * in one fenced transaction. Only the steps of those runs are read (not the whole fleet).
   */
  private adoptLeftRuns(): number[] {
    const left = leftRunning(this.db);
    const byId = stepsByIds(this.db, left.map((l) => l.stepId));
    const interrupted: number[] = [];
    let adopted = 0;
    for (const l of left) {
      const step = byId.get(l.stepId);
      const worker: Worker | null = step
        ? { step, state: l.state, attempt: l.attempt, historyId: l.historyId, opId: this.nextOpId++, controller: null, abandoned: false, startedMs: Date.now() }
        : null;
      const adoption = worker && this.driver.adopt && step!.state === l.state ? this.driver.adopt(l, this.request(worker)) : null;
      if (adoption?.kind === 'wait') {
        this.adopted.set(l.stepId, { worker: worker!, result: adoption.result });
        adopted++;
      } else {
        interrupted.push(l.historyId);
      }
    }
    if (adopted) this.progress.note(`resuming: ${adopted} run(s) left by the last apply are still going or ended meanwhile; they are not run again`);
    if (interrupted.length) this.progress.note(`resuming: ${interrupted.length} operation(s) were interrupted and will run again`);
    return interrupted;
  }

  /** A subcloud's fields, read once per subcloud in flight rather than once per state. */
  private readonly fields = new Map<number, Record<string, string | null>>();
  private subcloudFields(step: CursorStep): Record<string, string | null> {
    let f = this.fields.get(step.id);
    if (!f) {
      f = subcloudPlaceholders(this.db, step.subcloudId);
      this.fields.set(step.id, f);
    }
    return f;
  }

  /**
   * Commit the processes started since the last commit (for adoption after a kill -9) together
   * with `batch`, in one fenced transaction. Nothing is dropped if it fails: the caller retries.
   */
  private commitWithProcs(batch: Transition[]): void {
    this.procs.stop();
    const procs = this.procs.list;
    const record = procs.length ? () => recordRunProcesses(this.db, procs) : undefined;
    if (batch.length) this.writer.commit(batch, record);
    else if (record) this.write(record);
    else return;
    this.procs.recorded();
  }

  /** Run the state again after the backoff; the subcloud keeps its slot meanwhile. */
  private retryLater(step: CursorStep, state: string, delayMs: number): void {
    const t = setLongTimeout(() => {
      this.retryTimers.delete(t);
      this.queue({
        stepId: step.id,
        subcloudId: step.subcloudId,
        cloud: step.cloud,
        from: state,
        to: state,
        details: '',
        startAttempt: this.nextAttempt(step.id, state),
        ended: false,
      });
    }, delayMs);
    this.retryTimers.add(t);
  }

  private abandon(w: Worker): void {
    w.abandoned = true;
    w.controller?.abort();
  }

  private release(stepId: number, ended: boolean): void {
    this.fields.delete(stepId);
    // A driver's retry count is for one run of the subcloud through this process.
    for (const state of this.opts.states) this.failures.delete(`${stepId}\u0000${state}`);
    const slot = this.slots.get(stepId);
    if (!slot) return;
    this.slots.delete(stepId);
    slot.release(ended);
  }

  // --- Requests from other shells (requests.ts finds them; they are carried out here) ---

  /** Abort: start nothing new, mark every step not started `aborted`, let the rest run to its end. */
  private beginAbort(): void {
    const n = this.write(() => {
      casStrategyState(this.db, ['abort requested'], 'aborting');
      return abortInitialSteps(this.db);
    });
    this.aborting = true;
    this.noNewSubclouds = true;
    if (this.paused) this.setPaused(false, true);
    this.pending = this.withoutHeldBack(this.pending);
    this.progress.initialAborted?.();
    this.progress.note(`abort requested: ${n} step(s) not started are aborted; ${this.slots.size} subcloud(s) in flight run to their end`);
    this.window?.pump();
  }

  /** Pause (no new subcloud; in flight run on) or resume; `quiet`: said by the caller. */
  private setPaused(on: boolean, quiet = false): void {
    if (this.paused === on) return;
    this.paused = on;
    this.progress.paused?.(on);
    if (!quiet) {
      if (on) {
        this.progress.note(
          `paused: no new subcloud starts; ${this.slots.size} subcloud(s) in flight run to their end. ` +
            '`dcm strategy resume` goes on, `dcm strategy abort` ends it',
        );
      } else this.progress.note('resumed');
    }
    if (on) this.pending = this.withoutHeldBack(this.pending);
    else this.window?.pump();
  }

  /** A stage's window changed: the running stage follows at once, a later one when it starts. */
  private setWindow(stage: number, size: number): void {
    this.windows.set(stage, size);
    if (stage !== this.stage || !this.window) return;
    this.progress.windowChanged?.(stage, size);
    this.progress.note(`window of stage ${stage}: ${size} (${this.window.running} in flight)`);
    this.window.resize(size);
    // First starts the larger window let in but not yet committed do not happen: their subclouds
    // go back to the window, in order, until no more than `size` run (SPEC §4: a smaller window
    // starts none until fewer than N are in flight).
    let over = this.window.running - size;
    if (over > 0) {
      this.pending = this.pending.filter((t) => {
        if (over <= 0 || t.close !== undefined) return true;
        const slot = this.slots.get(t.stepId);
        if (!slot || slot.started || (slot.step.state !== 'initial' && !slot.step.retried)) return true;
        over--;
        this.release(t.stepId, false);
        return false;
      });
    }
  }

  /** The failure budget, from the file (at start, or changed by `strategy update`). */
  private setBudget(text: string | null, changed: boolean): void {
    this.budgetText = text;
    this.failureLimit = failureLimit(text, this.opts.stopOnFailure, this.totalSteps);
    if (changed) this.progress.note(`failure budget: ${this.failureLimit === null ? 'none' : `${this.failureLimit} failed step(s)`} (${this.failedCount} failed so far)`);
    this.window?.pump();
  }

  /** First Ctrl-C / SIGTERM: start nothing new, wait (bounded) for the operations in flight. */
  interrupt(signal: NodeJS.Signals): void {
    if (this.stopped) return;
    if (this.interruptedBy) {
      this.progress.warn(`${signal} again: not waiting for ${this.workers.size} operation(s) in flight`);
      this.stopNow();
      return;
    }
    this.interruptedBy = signal;
    this.noNewSubclouds = true;
    this.noNewOperations = true;
    const stays = this.paused ? 'paused' : 'applying';
    this.progress.warn(
      `${signal}: starting nothing new, waiting for ${this.workers.size} operation(s) in flight (again to stop waiting); ` +
        `the strategy stays ${stays}: run \`dcm strategy apply\` to resume`,
    );
    this.drainTimer = setLongTimeout(() => {
      this.progress.warn(`gave up waiting after ${formatDuration(this.opts.drainMs ?? 60_000)}`);
      this.stopNow();
    }, this.opts.drainMs ?? 60_000);
    this.drainTimer.unref();
    this.window?.pump();
  }

  /**
   * A write beside the orchestrator's own (the heartbeat) failed: a busy file is waited for and
   * said once; a full or corrupt one stops the apply as the orchestrator's own writes would.
   */
  writeFailed(err: Error): void {
    if (faultOf(err) === 'busy') this.sayBusy();
    else if (faultOf(err)) this.fail(err);
  }

  /** Stop at once, from outside (the lock was lost): nothing more is written; run() throws `err`. */
  stopWith(err: Error): void {
    this.fail(err);
  }

  private stopNow(): void {
    for (const w of this.workers.values()) this.abandon(w);
    this.hardStop?.();
  }

  private fail(err: Error): void {
    if (this.fatal) return;
    // A full, failing or corrupt file gets the SPEC's one-line message; anything else as it is.
    this.fatal = applyFaultError(err, this.opts.file ?? 'the database') ?? err;
    this.noNewSubclouds = true;
    this.stopNow();
  }

  // --- Finishing ---

  private async finish(started: number): Promise<number> {
    this.deadlines.stop();
    return finishRun(this.db, (fn) => this.untilNotBusy(() => this.write(fn)), this.progress, {
      signal: this.interruptedBy,
      aborting: this.aborting,
      paused: this.paused,
      failedSeen: this.failedSeen,
      abandoned: [...this.workers.values()].map((w) => w.historyId),
      startedMs: started,
      peakInFlight: this.peak,
      maxWindow: this.maxWindow,
    });
  }
}

/** Each stage's window and its steps' states as a run starts, for the progress views. */
function stageCounts(rows: { stage: number; state: string; n: number }[], windows: Map<number, number>): ApplyInfo['stages'] {
  const out = new Map<number, ApplyInfo['stages'][number]>();
  for (const [stage, window] of windows) out.set(stage, { stage, window, counts: {} });
  for (const r of rows) {
    let e = out.get(r.stage);
    if (!e) out.set(r.stage, (e = { stage: r.stage, window: 1, counts: {} }));
    e.counts[r.state] = (e.counts[r.state] ?? 0) + r.n;
  }
  return [...out.values()].filter((e) => Object.keys(e.counts).length).sort((a, b) => a.stage - b.stage);
}
