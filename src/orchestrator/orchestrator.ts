/**
 * The apply loop (SPEC §1, §6), wired from its parts; each owns one thing and says what it must
 * never touch:
 *   registry.ts     the map of running workers: the only place it is written
 *   decide.ts       a report -> its transition and what it counts toward (pure)
 *   commit-loop.ts  the queues, one flush per turn, the stop rule, the fenced commit
 *   stages.ts       slots, each stage's window, gates, deferrals, retries waiting
 *   fleet.ts        one of several workers: claims, fences, share (a null object on a file)
 *   control.ts      the gate's inputs: abort, pause, window, budget, signals, a fatal stop
 *   run-request.ts  what a driver is handed for one operation
 * and around them, none of which sees the registry: the deadlines (deadlines.ts), the requests
 * from other shells (requests.ts), the runs an earlier process left (adoption.ts), the finish
 * (finish.ts). Everything reaches the clock, timers, the driver and the store through the runtime
 * (runtime.ts), so the simulator (src/sim) runs this same code.
 */
import { ConfigBook } from '../domain/strategy-config.js';
import { adoptedText, EVENTS } from '../domain/events.js';
import type { ExtraArgs } from '../domain/options.js';
import type { StrategyType } from '../domain/types.js';
import type { OperationResult } from '../drivers/driver.js';
import { hostName, type Actor } from '../platform/who.js';
import { parseTime, timeIn } from '../store/clock.js';
import { failedAndTotal, type CursorStep } from '../store/cursor.js';
import { recordEvent } from '../store/events.js';
import { applyFaultError, faultOf } from '../store/faults.js';
import { interruptedLast, retryBudgets, type RetryBudget } from '../store/runs.js';
import { firstStartedAt, stageStateCounts } from '../store/status.js';
import { getDefaultConfig, subcloudOptions } from '../store/strategy-config.js';
import { controlSnapshot, strategyState } from '../store/strategy.js';
import { interruptRuns } from '../store/transitions.js';
import { adoptLeftRuns, type Adopted } from './adoption.js';
import { CommitLoop } from './commit-loop.js';
import { Control } from './control.js';
import { Deadlines } from './deadlines.js';
import { finishRun } from './finish.js';
import { LONE_FLEET, SharedFleet, type Fleet } from './fleet.js';
import type { ApplyInfo, ProgressSink } from './progress.js';
import { abandon, Registry, type Worker } from './registry.js';
import { ExternalRequests } from './requests.js';
import { RunRequests } from './run-request.js';
import type { Runtime } from './runtime.js';
import { Stages } from './stages.js';
import { TakeoverHandler } from './takeover.js';
import type { TakenOver, WorkerLease } from './workers.js';

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
  /** The apply lock's token, handed to every run (DCM_FENCE) so a site can refuse a stale orchestrator. */
  fenceToken?: string;
  /** Who runs this apply, for the event record (none: nothing is recorded). */
  who?: Actor;
  /** The clock maintenance windows are decided by (test-hooks.ts `windowClock`); the runtime's if absent. */
  windowClock?: () => number;
  /** One of several workers on the strategy (a PostgreSQL store, workers.ts). Absent: the one orchestrator of its file. */
  shared?: WorkerLease | null;
  /** The host recorded with each run's process (the simulator names its hosts). */
  host?: string;
}

const keyOf = (stepId: number, state: string) => `${stepId}\u0000${state}`;

export class Orchestrator {
  private readonly registry: Registry;
  private readonly fleet: Fleet;
  private readonly control: Control;
  private readonly stages: Stages;
  private readonly loop: CommitLoop;
  private readonly runs: RunRequests;
  private readonly deadlines: Deadlines;
  private readonly takeover: TakeoverHandler;
  private requests: ExternalRequests | null = null;
  /** (step, state) whose last run was cut off: its next run is told so (DCM_RESUMED). */
  private resumed = new Set<string>();
  /** Retries used by each (step, state) in flight, and a backoff a resumed one must still wait out (from the history). */
  private budgets = new Map<string, RetryBudget>();
  /** Runs an earlier orchestrator left going, each with the worker made for it: waited for once their subcloud has its slot. */
  private readonly adopted = new Map<number, { run: Adopted; worker: Worker }>();
  private config = new ConfigBook(undefined, []);
  private firstStartedMs: number | undefined;
  private hardStop: (() => void) | null = null;

  constructor(
    private readonly rt: Runtime,
    private readonly progress: ProgressSink,
    private readonly opts: OrchestratorOptions,
  ) {
    const db = rt.db;
    this.registry = new Registry(rt.now);
    this.fleet = opts.shared ? new SharedFleet(opts.shared, rt.timers) : LONE_FLEET;
    this.runs = new RunRequests(rt);
    this.stages = new Stages(rt, this.fleet, progress, {
      gate: () => this.control.gate(),
      ending: () => this.control.ending(),
      stopped: () => this.control.halted(),
      queue: (t) => this.loop.queue(t),
      takeAdopted: (step) => this.takeAdopted(step),
      retryDue: (step, state) => (this.resumed.has(keyOf(step.id, state)) ? null : (this.budgets.get(keyOf(step.id, state))?.dueMs ?? null)),
      forget: (stepId) => {
        this.runs.forget(stepId);
        // A retry budget is for one run of the subcloud through this entry of its states.
        for (const state of opts.states) this.budgets.delete(keyOf(stepId, state));
      },
      syncPaused: () => {
        this.control.setPaused(strategyState(db) === 'paused');
        return this.control.paused;
      },
      pauseByGate: (reason) => {
        this.control.setPaused(true, true);
        progress.note(`paused: ${reason}`);
        // The poll learns the state this process wrote, so that a resume is told from it.
        this.requests?.lookNow();
      },
      write: (fn) => this.loop.committer.write(fn),
      fail: (err) => this.control.fail(err),
      who: opts.who,
      type: opts.type,
      states: opts.states,
      extra: opts.extra,
      pollMs: opts.pollMs ?? 250,
      windowClock: opts.windowClock ?? rt.now,
    });
    this.control = new Control(rt, this.registry, this.fleet, progress, {
      inFlight: () => this.stages.inFlight,
      pump: () => this.stages.pump(),
      wake: () => {
        this.stages.gates?.wake();
        this.stages.wake();
      },
      stageHeld: () => this.stages.stageBudget?.exceeded() ?? false,
      drain: () => this.stages.interrupted((id) => this.registry.has(id) || this.loop.queued(id)),
      resumed: () => this.stages.reloadWindows((err) => this.loop.committer.isBusy(err), () => this.runs.readLabelled()),
      aborted: () => this.stages.deferrals?.clear(),
      hardStop: () => this.hardStop?.(),
      file: opts.file ?? 'the database',
      stopOnFailure: opts.stopOnFailure,
      drainMs: opts.drainMs ?? 60_000,
    });
    this.loop = new CommitLoop(
      rt,
      this.registry,
      this.fleet,
      {
        slot: (id) => this.stages.slot(id),
        gate: () => this.control.gate(),
        release: (id, ended) => this.stages.release(id, ended),
        refused: (id, why) => {
          // `taken`: another worker's subcloud (ended, for this pass); `full` waits in its place.
          if (why === 'full') this.fleet.block(() => this.stages.pump());
          this.stages.release(id, why !== 'full');
        },
        start: (step, state, attempt, historyId) => this.start(step, state, attempt, historyId),
        retryLater: (step, state, ms) => this.stages.retryLater(step, state, ms),
        deferred: (step) => this.stages.deferrals!.committed(step),
        decided: (d, w) => {
          const key = keyOf(w.step.id, w.state);
          if (d.resumed) this.resumed.add(key);
          if (d.retryUsed) {
            const b = this.budgets.get(key) ?? { failures: 0, dueMs: null };
            b.failures++;
            this.budgets.set(key, b);
          }
          if (d.failed === 'stage') this.stages.stageBudget?.stepFailed(w.step.cloud);
          if (d.failed) this.control.stepFailed(w.step.cloud);
        },
        lookNow: () => {
          if (!this.requests) return false;
          this.requests.lookNow();
          return true;
        },
        host: opts.host ?? hostName(),
        fail: (err) => this.control.fail(err),
        done: () => this.control.done(),
        interrupted: () => this.control.interruptedBy !== null,
      },
      {
        type: opts.type,
        states: opts.states,
        stateTimeoutMs: opts.stateTimeoutMs,
        timeIn,
        deferral: (w, reason) => this.stages.deferrals!.decide(w.step, w.state, reason),
      },
      progress,
      opts.type,
      opts.fence,
    );
    this.deadlines = new Deadlines(
      opts.stateTimeoutMs,
      (stepId, opId) => this.registry.current(stepId, opId),
      (stepId, opId) => {
        abandon(this.registry.get(stepId)!);
        this.loop.report(stepId, opId, { kind: 'timeout' });
      },
      rt.timers,
    );
    this.takeover = new TakeoverHandler(rt, this.fleet, this.stages, this.control, progress, {
      adoptLeft: () => this.adoptLeft(),
      held: (id) => this.loop.filter((t) => t.stepId !== id),
      closeInterrupted: (ids) => this.loop.committer.write(() => interruptRuns(db, ids, 'its worker stopped while this operation ran')),
      resumedAgain: (keys) => {
        for (const k of keys) this.resumed.add(k);
      },
      busy: (err) => this.loop.committer.isBusy(err),
    });
  }

  /** Run the strategy (already `applying`, paused, or being resumed) to its end; returns the exit code. */
  async run(): Promise<number> {
    const db = this.rt.db;
    const started = this.rt.now();
    // A strategy resumed (or retried) was first started by an earlier process: elapsed counts from then.
    const first = firstStartedAt(db);
    this.firstStartedMs = first === null ? undefined : Math.min(started, parseTime(first));
    this.config = new ConfigBook(getDefaultConfig(db), subcloudOptions(db));
    this.runs.readLabelled();
    this.stages.load(this.firstStartedMs ?? started);
    this.budgets = retryBudgets(db);
    const left = this.adoptLeft();
    if (left.adopted.size) {
      this.progress.note(`resuming: ${left.adopted.size} run(s) left by the last apply are still going or ended meanwhile; they are not run again`);
    }
    if (left.interrupted.length) this.progress.note(`resuming: ${left.interrupted.length} operation(s) were interrupted and will run again`);
    const who = this.opts.who;
    await this.loop.committer.write(() => {
      interruptRuns(db, left.interrupted, 'the orchestrator stopped while this operation ran');
      // Runs left `running` mean the last apply died with them out (kill -9, a lost host).
      if (who && (left.adopted.size || left.interrupted.length)) recordEvent(db, who, EVENTS.runsAdopted, adoptedText(left.adopted.size, left.interrupted.length));
    });
    this.resumed = interruptedLast(db);
    // Counts, not steps: the steps themselves are read a window at a time (store/cursor.ts).
    const { failed, total } = failedAndTotal(db);
    this.control.counted(failed, total);
    const snap = controlSnapshot(db)!;
    this.stages.windows = new Map(snap.windows);
    this.control.setBudget(snap.maxFailures, false);
    this.progress.begin?.({
      type: this.opts.type,
      states: this.opts.states,
      stages: stageCounts(stageStateCounts(db), this.stages.windows),
      startedMs: started,
      firstStartedMs: this.firstStartedMs,
      stateTimeoutMs: this.opts.stateTimeoutMs,
    });
    this.takeover.showFleet();
    const aborting = snap.state === 'abort requested' || snap.state === 'aborting';
    if (aborting) this.control.aborted(await this.loop.committer.write(() => this.control.abortWrite()));
    if (snap.state === 'paused') this.control.setPaused(true);
    this.requests = this.watchRequests(snap);
    this.requests.start();
    const stopped = new Promise<void>((resolve) => (this.hardStop = resolve));
    try {
      await Promise.race([this.stages.runAll(), stopped]);
      // Stopped without waiting (a second Ctrl-C): answers already received are still committed,
      // under the same stop rule (nothing new starts). The operations still out run again on resume.
      if (this.control.interruptedBy && !this.control.fatal) await this.loop.finalFlush();
    } finally {
      // Every way out (end, signal, fatal error) leaves no timer that would keep the process alive.
      this.requests.stop();
      this.stages.stop();
      this.control.clear();
      this.deadlines.stop();
      this.fleet.clear();
      this.loop.procs.stop();
      this.loop.details.stop();
      this.fleet.retire();
    }
    if (this.control.fatal) throw this.control.fatal;
    this.deadlines.stop();
    return finishRun(db, (fn) => this.loop.committer.write(fn), this.progress, {
      signal: this.control.interruptedBy,
      aborting: this.control.aborting,
      paused: this.control.paused,
      failedSeen: this.control.failedSeen,
      abandoned: this.registry.list().map((w) => w.historyId),
      startedMs: started,
      firstStartedMs: this.firstStartedMs,
      peakInFlight: this.stages.peak,
      maxWindow: this.stages.maxWindow,
      who: this.opts.who,
      shared: this.fleet.shared,
    });
  }

  /** The requests from other shells (requests.ts finds them; control carries them out). */
  private watchRequests(snap: NonNullable<ReturnType<typeof controlSnapshot>>): ExternalRequests {
    const c = this.control;
    const busy = (err: unknown) => this.loop.committer.isBusy(err);
    return new ExternalRequests(
      this.rt.db,
      {
        abort: () => {
          if (c.aborting) return;
          // Seen only once its effect has committed: a busy store throws, and the poll asks again.
          c.aborted(this.loop.committer.tryWrite(() => c.abortWrite()));
        },
        pause: (on) => c.setPaused(on),
        window: (stage, w) => this.stages.setWindow(stage, w, this.loop),
        budget: (text) => c.setBudget(text, true),
        fail: (err) => c.fail(err),
        busy,
        ended: () => c.endedElsewhere(),
        changed: () => {
          // One of several workers: the failures the others committed count toward the budget.
          if (this.fleet.shared) this.takeover.countFailures();
          const budget = this.stages.stageBudget;
          if (budget && this.stages.gates?.refreshBudget(budget)) this.stages.pump();
          // A gate waiting out a soak looks again: `strategy update` may have changed it.
          this.stages.gates?.wake();
        },
      },
      { pollMs: this.opts.pollMs, checkFile: this.opts.checkFile, timers: this.rt.timers },
      snap,
    );
  }

  /**
   * Runs an earlier orchestrator left going, each with the worker made for it once, here: the
   * request the driver keeps (its abort signal above all) is that worker's, so a second Ctrl-C or
   * a fatal stop reaches the run through it. One of several workers adopts only the runs of the
   * steps it holds (workers.ts gave it those of a worker gone from its host), and not twice.
   */
  private adoptLeft(): ReturnType<typeof adoptLeftRuns> {
    // A slot not started yet waits for its first claim here: that subcloud is adopted all the same.
    const skip = (id: number) => this.adopted.has(id) || this.stages.startedSlot(id);
    const left = adoptLeftRuns(
      this.rt.db,
      this.rt.driver,
      (step, l) => {
        const worker = this.registry.make(step, l.state, l.attempt, l.historyId);
        this.adopted.set(step.id, { run: null as unknown as Adopted, worker });
        return this.request(worker);
      },
      this.fleet.adoptScope(skip),
    );
    for (const [id, run] of left.adopted) this.adopted.get(id)!.run = run;
    for (const [id, a] of this.adopted) if (!a.run) this.adopted.delete(id);
    // One of several workers: the next runs of a subcloud adopted carry the fence its takeover gave it.
    if (this.fleet.shared) this.fleet.adopted(this.rt.db, [...left.adopted.keys()]);
    return left;
  }

  /** The subcloud got its slot: a run left going for it is waited for, never started again. */
  private takeAdopted(step: CursorStep): boolean {
    const a = this.adopted.get(step.id);
    if (!a) return false;
    this.adopted.delete(step.id);
    this.fleet.hold(step.id);
    a.worker.startedMs = this.rt.now();
    this.registry.add(a.worker);
    this.awaitResult(a.worker, a.run.result);
    return true;
  }

  /** Start one state operation: the registry gets its entry before the driver is called. */
  private start(step: CursorStep, state: string, attempt: number, historyId: number): void {
    const worker = this.registry.make(step, state, attempt, historyId);
    this.registry.add(worker);
    if (!this.rt.driver.ownsTimeouts) this.deadlines.add(step.id, worker.opId, this.registry.size);
    let running: Promise<OperationResult>;
    try {
      const req = this.request(worker);
      this.resumed.delete(keyOf(step.id, state));
      running = this.rt.driver.run(req);
    } catch (err) {
      // A driver that throws instead of rejecting fails this operation, not the whole apply.
      running = Promise.reject(err);
    }
    this.awaitResult(worker, running);
  }

  /** The driver's answer, whatever it is, becomes a report for this worker. */
  private awaitResult(worker: Worker, result: Promise<OperationResult>): void {
    const { step, opId } = worker;
    result.then(
      (r) => this.loop.report(step.id, opId, r),
      (err: Error) => {
        // The store under the driver is full, corrupt or gone: that is not this subcloud's
        // failure, and the apply cannot go on.
        const fault = applyFaultError(err, this.opts.file ?? 'the database');
        if (fault) this.control.fail(fault);
        else this.loop.report(step.id, opId, { kind: 'failed', reason: (err && err.message) || String(err) });
      },
    );
  }

  private request(worker: Worker) {
    const { step, state, historyId } = worker;
    const key = keyOf(step.id, state);
    return this.runs.request(worker, {
      type: this.opts.type,
      states: this.opts.states,
      campaign: this.opts.campaign,
      extra: this.opts.extra,
      config: this.config,
      resumed: this.resumed.has(key),
      failures: this.budgets.get(key)?.failures ?? 0,
      fence: this.fleet.fenceOf(step.id, this.opts.fenceToken),
      onStarted: (proc) => this.loop.procs.add(historyId, proc),
      // Held with the run it came from (its history row; an adopted run's registry entry is made
      // later than this request): once that run has ended it is dropped, never written.
      onProgress: (text) => {
        const w = this.registry.get(step.id);
        if (!this.control.stopped && w && w.historyId === historyId) this.loop.details.report(step.id, w.opId, text);
      },
    });
  }

  /** This worker's lease was renewed: what it took over is taken in, and the views see the fleet. */
  beat(taken: readonly TakenOver[]): void {
    if (taken.length) this.takeover.takenOver(taken);
    this.takeover.showFleet();
  }

  /** First Ctrl-C / SIGTERM drains; a second stops waiting. */
  interrupt(signal: NodeJS.Signals): void {
    this.control.interrupt(signal);
  }

  /**
   * A write beside the orchestrator's own (the heartbeat) failed: a busy store is waited for and
   * said once; a full or corrupt one stops the apply as the orchestrator's own writes would.
   */
  writeFailed(err: Error): void {
    if (this.loop.committer.isBusy(err)) return;
    if (faultOf(err)) this.control.fail(err);
  }

  /** Stop at once, from outside (the lock was lost): nothing more is written; run() throws `err`. */
  stopWith(err: Error): void {
    this.control.fail(err);
  }

  /** Runs were left to the worker that took this one over: the driver must not stop them as it closes. */
  get leftGoing(): boolean {
    return this.control.leftGoing;
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
