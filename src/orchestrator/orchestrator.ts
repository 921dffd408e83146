/**
 * The apply loop (SPEC §1, §6). It alone owns the registry of running workers: it adds an entry
 * when it starts a state operation, and it alone removes or replaces it when it has committed how
 * that operation ended. A driver only performs the operation and reports; a report that does not
 * match the registry's entry (a late answer after a timeout) changes nothing.
 *
 * Flow, all event-driven: reports are queued; one flush per event-loop turn decides every queued
 * report, commits all the resulting transitions in one transaction (durable before visible), then
 * starts the operations those transitions opened. Each stage runs through its own p-limit window;
 * a subcloud holds its slot from its first state to its end, and stage N+1 starts when every
 * subcloud of stage N has ended.
 */
import pLimit from 'p-limit';
import { performance } from 'node:perf_hooks';
import { formatDuration } from '../domain/durations.js';
import { EXIT } from '../domain/errors.js';
import { STEP_ENDED, TYPES, type StrategyType } from '../domain/types.js';
import type { Driver, OperationRequest, OperationResult } from '../drivers/driver.js';
import { interruptedLast, leftRunning, markInterrupted, recordRunProcesses, subcloudPlaceholders } from '../store/runs.js';
import type { RunProcess } from '../drivers/driver.js';
import type { ExtraArgs } from '../domain/options.js';
import { now } from '../store/clock.js';
import type { Db } from '../store/open.js';
import { casStrategyState, listStages, strategyState } from '../store/strategy.js';
import {
  abortInitialSteps,
  attemptCounts,
  countStepStates,
  interruptRuns,
  loadSteps,
  TransitionWriter,
  type ApplyStep,
  type Transition,
} from '../store/transitions.js';
import { applyFaultError, faultOf } from '../store/faults.js';
import { ConfigBook } from '../domain/strategy-config.js';
import { getDefaultConfig, subcloudOptions } from '../store/strategy-config.js';
import { SUMMARY_FAILURES, type ApplyInfo, type ProgressSink } from './progress.js';
import { failedSteps } from '../store/status.js';

export interface OrchestratorOptions {
  type: StrategyType;
  states: readonly string[];
  stopOnFailure: boolean;
  campaign: string;
  extra: ExtraArgs;
  stateTimeoutMs: number;
  /** How often external changes (an abort from another shell) are looked for. */
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
  step: ApplyStep;
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

/** How long a started run's process may wait to be recorded with other writes. */
const PROC_RECORD_MS = 50;

/** setTimeout's longest delay; a longer one fires at once (TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2_147_483_647;

/** When an operation times out; see `Deadlines`. */
interface Deadline {
  at: number;
  stepId: number;
  opId: number;
}

interface Report {
  stepId: number;
  opId: number;
  result: OperationResult | { kind: 'timeout' };
  finishedAt: string;
  finishedMs: number;
}

/** A subcloud holding a slot of its stage's window, from its first state to its end. */
interface Slot {
  step: ApplyStep;
  release: () => void;
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
  private attempts = new Map<string, number>();
  /** (step, state) whose last run was cut off: its next run is told so (DCM_RESUMED). */
  private resumed = new Set<string>();
  /** Runs of a (step, state) that failed or timed out in this process: the driver's retry budget. */
  private failures = new Map<string, number>();
  /** Runs an earlier orchestrator left going, adopted by the driver: waited for once their subcloud has its slot. */
  private adopted = new Map<number, { worker: Worker; result: Promise<OperationResult> }>();
  /** Retries waiting out their backoff: the subcloud keeps its slot meanwhile. */
  private retryTimers = new Set<NodeJS.Timeout>();
  /**
   * Processes started and not yet recorded in their history rows: they go with the next commit of
   * transitions, or on their own after PROC_RECORD_MS (a commit each would double the commits per
   * run). Until then the launcher's `.pid` file beside the run's log tells where the run is.
   */
  private procs: [number, RunProcess][] = [];
  private procTimer: NodeJS.Timeout | null = null;

  private noNewSubclouds = false;
  private noNewOperations = false;
  private aborting = false;
  private failedSeen = false;
  private interruptedBy: NodeJS.Signals | null = null;
  private hardStop: (() => void) | null = null;
  private drainTimer: NodeJS.Timeout | null = null;
  /** Set once run() is done: a late answer or a queued flush must change nothing any more. */
  private stopped = false;
  private fatal: Error | null = null;
  private peak = 0;
  /** The largest window of a stage in which a subcloud started (for the summary). */
  private maxWindow = 0;
  private stageWindow = 0;
  private lastDataVersion = -1;
  private lastFileCheck = 0;
  private busySaid = false;
  private deadlines: Deadline[] = [];
  private deadlineHead = 0;
  private deadlineTimer: NodeJS.Timeout | null = null;
  /** The strategy-config options of each subcloud, read once when the run starts. */
  private config = new ConfigBook(undefined, []);

  constructor(
    private readonly db: Db,
    private readonly driver: Driver,
    private readonly progress: ProgressSink,
    private readonly opts: OrchestratorOptions,
  ) {
    this.writer = new TransitionWriter(db, opts.type, () => this.fence());
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

  /** Run the strategy (already `applying`, or being resumed) to its end; returns the exit code. */
  async run(): Promise<number> {
    const started = Date.now();
    this.config = new ConfigBook(getDefaultConfig(this.db), subcloudOptions(this.db));
    const steps = loadSteps(this.db);
    const cutOff = this.adoptLeftRuns(steps);
    await this.untilNotBusy(() =>
      this.write(() => {
        for (const id of cutOff) markInterrupted(this.db, id, 'the orchestrator stopped while this operation ran');
      }),
    );
    this.attempts = attemptCounts(this.db);
    this.resumed = interruptedLast(this.db);
    this.failedSeen = steps.some((s) => s.state === 'failed');
    if (this.opts.stopOnFailure && this.failedSeen) this.noNewSubclouds = true;
    this.progress.begin?.({
      type: this.opts.type,
      states: this.opts.states,
      stages: stageCounts(steps, listStages(this.db)),
      startedMs: started,
      stateTimeoutMs: this.opts.stateTimeoutMs,
    });
    const state = strategyState(this.db);
    if (state === 'abort requested' || state === 'aborting') await this.untilNotBusy(() => this.beginAbort());

    const poll = setInterval(() => this.poll(), this.opts.pollMs ?? 250);
    const stopped = new Promise<void>((resolve) => (this.hardStop = resolve));
    try {
      await Promise.race([this.runStages(steps), stopped]);
      // Stopped without waiting (a second Ctrl-C): answers already received are still committed;
      // nothing new starts (noNewOperations). The operations still out run again on resume.
      if (this.interruptedBy && !this.fatal && (this.reports.length || this.pending.length || this.procs.length)) this.flush();
    } finally {
      // Every way out (end, signal, fatal error) leaves no timer that would keep the process alive.
      clearInterval(poll);
      if (this.drainTimer) clearTimeout(this.drainTimer);
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
      this.deadlineTimer = null;
      for (const t of this.retryTimers) clearTimeout(t);
      this.retryTimers.clear();
      if (this.procTimer) clearTimeout(this.procTimer);
      this.procTimer = null;
      this.stopped = true;
    }
    if (this.fatal) throw this.fatal;
    return await this.finish(started);
  }

  private async runStages(steps: ApplyStep[]): Promise<void> {
    const windows = new Map(listStages(this.db).map((s) => [s.stage, s.max_parallel]));
    const stages = [...new Set(steps.map((s) => s.stage))].sort((a, b) => a - b);
    for (const stage of stages) {
      // Steps caught mid-state go first: they held a slot when the last process stopped.
      const open = steps.filter((s) => s.stage === stage && !STEP_ENDED.includes(s.state));
      open.sort((a, b) => Number(a.state === 'initial') - Number(b.state === 'initial') || a.id - b.id);
      if (open.length === 0) continue;
      const window = windows.get(stage) ?? 1;
      this.stageWindow = window;
      this.progress.stageStarted?.(stage, window);
      await this.runWindow(open, window);
      if (this.interruptedBy || this.fatal) return;
    }
  }

  /**
   * One stage through a p-limit window. Subclouds are handed to the limiter from a cursor, at most
   * `window` at a time, rather than all queued up front: a closure and promises per subcloud of a
   * 10,000-subcloud stage would cost memory that grows with the fleet instead of the window.
   */
  private runWindow(open: ApplyStep[], window: number): Promise<void> {
    const limit = pLimit(window);
    return new Promise<void>((done) => {
      let next = 0;
      let handed = 0;
      const feed = () => {
        while (handed < window && next < open.length) {
          const step = open[next++];
          handed++;
          void limit(() => this.runSubcloud(step)).then(() => {
            handed--;
            feed();
          });
        }
        if (handed === 0 && next >= open.length) done();
      };
      feed();
    });
  }

  /** Resolves when the subcloud has ended (or will not start); its slot is held until then. */
  private runSubcloud(step: ApplyStep): Promise<void> {
    // A subcloud caught mid-state by the last process was in flight: it runs to its end even
    // after an abort or a stop on failure; only a signal (or a fatal error) holds it back.
    const inFlight = step.state !== 'initial';
    if (this.fatal || this.noNewOperations || (this.noNewSubclouds && !inFlight)) return Promise.resolve();
    return new Promise<void>((release) => {
      this.slots.set(step.id, { step, release });
      this.peak = Math.max(this.peak, this.slots.size);
      this.maxWindow = Math.max(this.maxWindow, this.stageWindow);
      const adopted = this.adopted.get(step.id);
      if (adopted) {
        // Still going (or ended while no dcm ran): wait for it, never start it again.
        this.adopted.delete(step.id);
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

  /** Attempts already made: from the history as it was when this process started, then each start. */
  private nextAttempt(stepId: number, state: string): number {
    return (this.attempts.get(`${stepId}\u0000${state}`) ?? 0) + 1;
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
  private report(stepId: number, opId: number, result: Report['result']): void {
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
        if (this.procTimer === null && this.procs.length) this.commitWithProcs([]);
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
        else this.release(t.stepId);
      }
    } catch (err) {
      this.fail(err as Error);
    }
  }

  /**
   * Starts queued before an abort, a stop on failure or a signal was noticed do not happen: a
   * subcloud not started stays as it is (initial, or aborted by the abort) and gives its slot back.
   */
  private withoutHeldBack(batch: Transition[]): Transition[] {
    if (!this.noNewSubclouds) return batch;
    return batch.filter((t) => {
      const isStart = t.close === undefined;
      const held = (t.from === 'initial' && isStart) || (isStart && this.noNewOperations);
      if (held) this.release(t.stepId);
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
      const at = r.finishedAt;
      const index = this.opts.states.indexOf(state);
      const result = this.checkNext(r.result, index);
      if (result.kind === 'retry') {
        // The run is over without a result: its row closes, and the state runs again as a new
        // attempt once the backoff is over, through this same registry.
        const key = `${step.id}\u0000${state}`;
        if (result.outcome === 'interrupted') this.resumed.add(key);
        else this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
        this.pending.push({
          stepId: step.id,
          subcloudId: step.subcloudId,
          cloud: step.cloud,
          from: state,
          to: state,
          details: `${state}: ${result.reason} (run again in ${formatDuration(result.delayMs)})`,
          close: { historyId: w.historyId, outcome: result.outcome, finishedAt: at, details: result.reason },
          retryInMs: result.delayMs,
          ended: false,
        });
        continue;
      }
      if (result.kind === 'next') {
        const next = result.next ?? this.opts.states[index + 1] ?? 'complete';
        const ended = next === 'complete';
        const startAttempt = ended || this.noNewOperations ? undefined : this.nextAttempt(step.id, next);
        this.pending.push({
          stepId: step.id,
          subcloudId: step.subcloudId,
          cloud: step.cloud,
          from: state,
          to: next,
          details: result.details ?? '',
          close: { historyId: w.historyId, outcome: 'ok', finishedAt: at, details: result.details ?? '', durationMs: r.finishedMs - w.startedMs },
          startAttempt,
          // A custom type has no endpoint nor prestage status to bring up to date.
          completes: ended && this.opts.type !== 'custom' ? { endpoint: TYPES[this.opts.type].endpoint } : undefined,
          ended,
        });
      } else {
        const timeout = result.kind === 'timeout' || (result.kind === 'failed' && result.timeout === true);
        const reason = result.kind === 'failed' ? result.reason : `timed out after ${formatDuration(this.opts.stateTimeoutMs)}`;
        this.pending.push({
          stepId: step.id,
          subcloudId: step.subcloudId,
          cloud: step.cloud,
          from: state,
          to: 'failed',
          details: `${state}: ${reason}`,
          close: { historyId: w.historyId, outcome: timeout ? 'timeout' : 'failed', finishedAt: at, details: reason, durationMs: r.finishedMs - w.startedMs },
          ended: true,
        });
        this.failedSeen = true;
        if (this.opts.stopOnFailure && !this.noNewSubclouds) {
          this.noNewSubclouds = true;
          this.progress.note(`${step.cloud} failed: stop on failure, no new subcloud will start`);
        }
      }
    }
  }

  /**
   * A driver may only go on to a later state of the type, or skip to `complete` (SPEC §3): going
   * back, or to a state the type does not have, would run a state twice or out of order.
   */
  private checkNext(result: Report['result'], index: number): Report['result'] {
    if (result.kind !== 'next' || result.next === undefined || result.next === 'complete') return result;
    if (this.opts.states.indexOf(result.next) > index) return result;
    return { kind: 'failed', reason: `the driver reported an invalid next state '${result.next}'` };
  }

  /** Start one state operation: the registry gets its entry before the driver is called. */
  private start(step: ApplyStep, state: string, attempt: number, historyId: number): void {
    const existing = this.workers.get(step.id);
    if (existing) {
      throw new Error(`internal: ${step.cloud} already runs ${existing.state}; refusing a second worker for ${state}`);
    }
    const opId = this.nextOpId++;
    const worker: Worker = { step, state, attempt, historyId, opId, controller: null, abandoned: false, startedMs: Date.now() };
    this.workers.set(step.id, worker);
    this.attempts.set(`${step.id}\u0000${state}`, attempt);
    if (!this.driver.ownsTimeouts) {
      this.deadlines.push({ at: performance.now() + this.opts.stateTimeoutMs, stepId: step.id, opId });
      this.compactDeadlines();
      this.armDeadline();
    }
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
        const fault = faultOf(err) && faultOf(err) !== 'busy' ? applyFaultError(err, this.opts.file ?? 'the database') : null;
        if (fault) this.fail(fault);
        else this.report(step.id, opId, { kind: 'failed', reason: (err && err.message) || String(err) });
      },
    );
  }

  private request(worker: Worker): OperationRequest {
    const { step, state, attempt, historyId } = worker;
    const key = `${step.id}\u0000${state}`;
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
      subcloud: this.subcloudFields(step),
      campaign: this.opts.campaign,
      extra: this.opts.extra,
      options: this.config.optionsFor(step.subcloudId),
      get signal() {
        if (!worker.controller) {
          worker.controller = new AbortController();
          if (worker.abandoned) worker.controller.abort();
        }
        return worker.controller.signal;
      },
      // Recorded by the next flush, in one transaction for all: until then the launcher's own pid
      // file beside the run's log tells a later apply where the run is.
      onStarted: (proc) => {
        this.procs.push([historyId, proc]);
        this.procTimer ??= setTimeout(() => {
          this.procTimer = null;
          this.scheduleFlush();
        }, PROC_RECORD_MS);
      },
    };
  }

  /**
   * Runs an earlier orchestrator left `running`: the driver says whether each is still going (or
   * ended and left its status), to be waited for, or was cut off, to run again as the next attempt.
   * Returns the history rows of the runs that were cut off, for the caller to mark `interrupted`
   * in one fenced transaction.
   */
  private adoptLeftRuns(steps: ApplyStep[]): number[] {
    const byId = new Map(steps.map((s) => [s.id, s]));
    const interrupted: number[] = [];
    let adopted = 0;
    for (const left of leftRunning(this.db)) {
      const step = byId.get(left.stepId);
      const worker: Worker | null = step
        ? {
            step,
            state: left.state,
            attempt: left.attempt,
            historyId: left.historyId,
            opId: this.nextOpId++,
            controller: null,
            abandoned: false,
            startedMs: Date.now(),
          }
        : null;
      const adoption = worker && this.driver.adopt && step!.state === left.state ? this.driver.adopt(left, this.request(worker)) : null;
      if (adoption?.kind === 'wait') {
        this.adopted.set(left.stepId, { worker: worker!, result: adoption.result });
        adopted++;
      } else {
        interrupted.push(left.historyId);
      }
    }
    if (adopted) this.progress.note(`resuming: ${adopted} run(s) left by the last apply are still going or ended meanwhile; they are not run again`);
    if (interrupted.length) this.progress.note(`resuming: ${interrupted.length} operation(s) were interrupted and will run again`);
    return interrupted;
  }

  /** A subcloud's fields, read once per subcloud in flight rather than once per state. */
  private readonly fields = new Map<number, Record<string, string | null>>();
  private subcloudFields(step: ApplyStep): Record<string, string | null> {
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
    if (this.procTimer) clearTimeout(this.procTimer);
    this.procTimer = null;
    if (this.procs.length === 0 && batch.length === 0) return;
    this.write(() => {
      if (this.procs.length) recordRunProcesses(this.db, this.procs);
      if (batch.length) this.writer.commit(batch);
    });
    this.procs = [];
  }

  /** Run the state again after the backoff; the subcloud keeps its slot meanwhile. */
  private retryLater(step: ApplyStep, state: string, delayMs: number): void {
    const t = setTimeout(() => {
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

  /**
   * Every operation gets the same timeout, so deadlines arrive in start order: a FIFO queue and a
   * single timer for its head serve them all (a timer per operation costs more than the work of a
   * zero-latency operation). Entries of operations that already ended are skipped when reached,
   * or dropped by `compactDeadlines`.
   */
  private armDeadline(): void {
    if (this.deadlineTimer || this.deadlineHead >= this.deadlines.length) return;
    const wait = Math.min(MAX_TIMER_MS, Math.max(0, this.deadlines[this.deadlineHead].at - performance.now()));
    this.deadlineTimer = setTimeout(() => this.expireDeadlines(), wait);
  }

  /**
   * Entries of operations that ended stay queued until their deadline (an hour by default) unless
   * dropped here: keep the queue proportional to the operations running, not to those run.
   */
  private compactDeadlines(): void {
    if (this.deadlines.length - this.deadlineHead <= 2 * this.workers.size + 1024) return;
    this.deadlines = this.deadlines.slice(this.deadlineHead).filter((d) => this.workers.get(d.stepId)?.opId === d.opId);
    this.deadlineHead = 0;
  }

  private expireDeadlines(): void {
    this.deadlineTimer = null;
    // Monotonic: a step of the wall clock moves no deadline.
    const t = performance.now();
    while (this.deadlineHead < this.deadlines.length && this.deadlines[this.deadlineHead].at <= t) {
      const d = this.deadlines[this.deadlineHead++];
      const w = this.workers.get(d.stepId);
      if (w && w.opId === d.opId) {
        this.abandon(w);
        this.report(d.stepId, d.opId, { kind: 'timeout' });
      }
    }
    this.armDeadline();
  }

  private abandon(w: Worker): void {
    w.abandoned = true;
    w.controller?.abort();
  }

  private release(stepId: number): void {
    this.fields.delete(stepId);
    const slot = this.slots.get(stepId);
    if (!slot) return;
    this.slots.delete(stepId);
    slot.release();
  }

  /** Look for changes made by other processes: an abort request. Cheap when nothing changed. */
  private poll(): void {
    try {
      const t = performance.now();
      if (this.opts.checkFile && t - this.lastFileCheck >= 500) {
        this.lastFileCheck = t;
        this.opts.checkFile();
      }
      const version = this.db.pragma('data_version', { simple: true }) as number;
      if (version === this.lastDataVersion) return;
      this.lastDataVersion = version;
      if (!this.aborting && strategyState(this.db) === 'abort requested') this.beginAbort();
    } catch (err) {
      // A busy file: the next poll looks again (data_version is read anew, so nothing is missed).
      if (faultOf(err) === 'busy') {
        this.lastDataVersion = -1;
        return;
      }
      this.fail(err as Error);
    }
  }

  /** Abort: start nothing new, mark every step not started `aborted`, let the rest run to its end. */
  private beginAbort(): void {
    const n = this.write(() => {
      casStrategyState(this.db, ['abort requested'], 'aborting');
      return abortInitialSteps(this.db);
    });
    this.aborting = true;
    this.noNewSubclouds = true;
    this.pending = this.withoutHeldBack(this.pending);
    this.progress.initialAborted?.();
    this.progress.note(`abort requested: ${n} step(s) not started are aborted; ${this.slots.size} subcloud(s) in flight run to their end`);
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
    this.progress.warn(
      `${signal}: starting nothing new, waiting for ${this.workers.size} operation(s) in flight (again to stop waiting); ` +
        'the strategy stays applying: run `dcm strategy apply` to resume',
    );
    this.drainTimer = setTimeout(() => {
      this.progress.warn(`gave up waiting after ${formatDuration(this.opts.drainMs ?? 60_000)}`);
      this.stopNow();
    }, this.opts.drainMs ?? 60_000);
    this.drainTimer.unref();
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

  private async finish(started: number): Promise<number> {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    let exit: number;
    let final: string;
    if (this.interruptedBy) {
      final = 'applying';
      exit = this.interruptedBy === 'SIGTERM' ? EXIT.sigterm : EXIT.sigint;
    } else if (this.aborting) {
      final = 'aborted';
      exit = EXIT.aborted;
    } else {
      const counts = countStepStates(this.db);
      final = counts.failed || this.failedSeen ? 'failed' : counts.initial ? 'failed' : 'complete';
      exit = final === 'complete' ? EXIT.ok : EXIT.failed;
    }
    // Operations abandoned by a second signal (or the drain's bound) will run again on resume;
    // until then the history says they were interrupted rather than still running. Only this
    // process's own runs, and only while it holds the lock (the fence).
    const abandoned = [...this.workers.values()].map((w) => w.historyId);
    const counts = await this.untilNotBusy(() =>
      this.write(() => {
        if (this.interruptedBy) interruptRuns(this.db, abandoned, `the orchestrator stopped waiting for it (${this.interruptedBy})`);
        if (final !== 'applying' && !casStrategyState(this.db, ['applying', 'abort requested', 'aborting'], final)) {
          throw new Error(`the strategy was changed by another process while applying (it is now ${strategyState(this.db)})`);
        }
        return countStepStates(this.db);
      }),
    );
    this.progress.summary({
      state: final,
      counts,
      durationMs: Date.now() - started,
      peakInFlight: this.peak,
      maxWindow: this.maxWindow,
      ...failedSteps(this.db, SUMMARY_FAILURES),
    });
    return exit;
  }
}

/** Each stage's window and its steps' states as a run starts, for the progress views. */
function stageCounts(steps: ApplyStep[], stages: { stage: number; max_parallel: number }[]): ApplyInfo['stages'] {
  const out = new Map<number, ApplyInfo['stages'][number]>();
  for (const st of stages) out.set(st.stage, { stage: st.stage, window: st.max_parallel, counts: {} });
  for (const step of steps) {
    let e = out.get(step.stage);
    if (!e) out.set(step.stage, (e = { stage: step.stage, window: 1, counts: {} }));
    e.counts[step.state] = (e.counts[step.state] ?? 0) + 1;
  }
  return [...out.values()].filter((e) => Object.keys(e.counts).length).sort((a, b) => a.stage - b.stage);
}
