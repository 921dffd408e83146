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
import { CONTROL_EVENTS, adoptedText, EVENTS } from '../domain/events.js';
import { parseTime, timeIn } from '../store/clock.js';
import { failedAndTotal } from '../store/cursor.js';
import { faultOf } from '../store/faults.js';
import { recordEvent } from '../store/events.js';
import { firstStartedAt, stageStateCounts } from '../store/status.js';
import { getDefaultConfig, subcloudOptions } from '../store/strategy-config.js';
import { controlSnapshot, strategyState } from '../store/strategy.js';
import { storeClockMs } from '../store/workers.js';
import { interruptRuns } from '../store/transitions.js';
import { CommitLoop, FINAL_FLUSH_MS } from './commit-loop.js';
import { Control } from './control.js';
import { finishRun } from './finish.js';
import { LONE_FLEET, SharedFleet, type Fleet } from './fleet.js';
import { stageCounts, type ProgressSink } from './progress.js';
import { Registry } from './registry.js';
import { Launcher, resumingNotes } from './launch.js';
import type { OrchestratorOptions } from './options.js';
import { durationKey } from '../store/durations.js';
import type { ExternalRequests } from './requests.js';
import { watchRequests } from './request-wiring.js';
import { RunRequests } from './run-request.js';
import type { Runtime } from './runtime.js';
import { Stages } from './stages.js';
import { TakeoverHandler } from './takeover.js';
import type { TakenOver } from './workers.js';
export type { OrchestratorOptions };

export class Orchestrator {
  private readonly registry: Registry;
  private readonly fleet: Fleet;
  private readonly control: Control;
  private readonly stages: Stages;
  private readonly loop: CommitLoop;
  private readonly runs: RunRequests;
  private readonly launcher: Launcher;
  private readonly takeover: TakeoverHandler;
  private requests: ExternalRequests | null = null;
  private config = new ConfigBook(undefined, []);
  private firstStartedMs: number | undefined;
  private hardStop: (() => void) | null = null;

  constructor(
    private readonly rt: Runtime,
    private readonly progress: ProgressSink,
    private readonly opts: OrchestratorOptions,
  ) {
    const db = rt.db;
    const busy = (err: unknown) => this.loop.committer.isBusy(err);
    this.registry = new Registry(rt.clock.wall);
    this.fleet = opts.shared ? new SharedFleet(opts.shared, rt) : LONE_FLEET;
    this.runs = new RunRequests(rt);
    this.stages = new Stages(rt, this.fleet, progress, {
      gate: () => this.control.gate(),
      ending: () => this.control.ending(),
      stopped: () => this.control.halted(),
      queue: (t) => this.loop.queue(t),
      adopted: () => this.launcher,
      retryDue: (step, state) => this.launcher.retryDue(step, state),
      forget: (stepId) => this.launcher.forget(stepId),
      syncPaused: async () => {
        this.control.setPaused(await strategyState(db) === 'paused');
        return this.control.paused;
      },
      pauseByGate: async (reason) => {
        this.control.setPaused(true, true);
        progress.note(`paused: ${reason}`);
        // The poll learns the state this process wrote, so that a resume is told from it.
        await this.requests?.lookNow();
      },
      write: (fn) => this.loop.committer.write(fn),
      fail: (err) => this.control.fail(err),
      who: opts.who,
      type: opts.type,
      states: opts.states,
      extra: opts.extra,
      pollMs: opts.pollMs ?? 250,
      windowClock: opts.windowClock ?? rt.clock.wall,
      pace: (stage) => this.loop.pacer.pace(stage),
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
      // Read again, then looked at again: a subcloud set aside for the old window may start now.
      resumed: () => void this.stages.reloadWindows(busy, () => this.runs.readLabelled()).then(() => this.stages.pump(), (err: Error) => this.control.fail(err)),
      aborted: () => this.stages.deferrals?.clear(),
      abandonAdopted: () => this.launcher.abandonAdopted(),
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
        lend: (ids) => this.stages.lend(ids),
        refused: (id, why) => this.stages.refused(id, why),
        start: (step, state, attempt, historyId, out) => this.launcher.start(step, state, attempt, historyId, out),
        closed: (t) => this.launcher.closed(t),
        retryLater: (step, state, ms) => this.stages.retryLater(step, state, ms),
        deferred: (step, details) => this.stages.deferred(step, details),
        decided: (d, w) => {
          this.launcher.decided(d, w);
          if (d.failed === 'stage') this.stages.stageBudget?.stepFailed(w.step.cloud);
          if (d.failed) this.control.stepFailed(w.step.cloud);
        },
        lookNow: async () => {
          if (!this.requests) return false;
          await this.requests.lookNow();
          return true;
        },
        host: opts.host ?? rt.host,
        fail: (err) => this.control.fail(err),
        done: () => this.control.done(),
        interrupted: () => this.control.interruptedBy !== null,
      },
      {
        type: opts.type,
        states: opts.states,
        stateTimeoutMs: opts.stateTimeoutMs,
        timeIn: (ms) => timeIn(rt.clock, ms),
        deferral: (w, reason) => this.stages.deferrals!.decide(w.step, w.state, reason),
        abortedNow: () => this.control.abortedNow,
      },
      progress,
      durationKey(opts.type, opts.extra), // the statistics its ok runs add to (store/durations.ts)
      opts.fence,
    );
    this.launcher = new Launcher(
      rt,
      this.registry,
      this.fleet,
      this.runs,
      {
        report: (stepId, opId, result) => this.loop.report(stepId, opId, result),
        fail: (err) => this.control.fail(err),
        started: (historyId, proc) => {
          if (proc) this.loop.procs.add(historyId, proc);
          this.loop.pacer.begun(historyId);
        },
        progress: (stepId, opId, text) => this.loop.details.report(stepId, opId, text),
        stopped: () => this.control.stopped,
        startedSlot: (id) => this.stages.startedSlot(id),
        config: () => this.config,
      },
      { ...opts, file: opts.file ?? 'the database' },
    );
    this.takeover = new TakeoverHandler(rt, this.fleet, this.stages, this.control, progress, {
      adoptLeft: () => this.launcher.adoptLeft(),
      held: (id) => this.loop.filter((t) => t.stepId !== id),
      closeInterrupted: (ids) => this.loop.committer.write((tx) => interruptRuns(tx, ids, 'its worker stopped while this operation ran')),
      resumedAgain: () => this.launcher.resumedAgain(),
      busy,
      observer: opts.observer,
    });
  }

  /** Run the strategy (already `applying`, paused, or being resumed) to its end; returns the exit code. */
  async run(): Promise<number> {
    const db = this.rt.db;
    // Wall time for what is shown and compared with stored times; its length on the monotonic clock.
    const [started, startedMono] = [this.rt.clock.wall(), this.rt.clock.mono()];
    const startedUp = this.loop.holdOff(); // a heartbeat's takeover waits for the start's own adoption
    // A strategy resumed (or retried) was first started by an earlier process: elapsed counts from then.
    const first = await firstStartedAt(db);
    // One of several workers reads a start another host wrote: taken on the store's clock, so that a
    // host whose own clock is off does not count its offset as time since the first start.
    const skewMs = this.fleet.shared && first !== null ? await storeClockMs(db) - started : 0;
    this.firstStartedMs = first === null ? undefined : Math.min(started, parseTime(first) - skewMs);
    this.config = new ConfigBook(await getDefaultConfig(db), await subcloudOptions(db));
    await this.runs.readLabelled();
    await this.stages.load(this.firstStartedMs ?? started);
    await this.launcher.loadBudgets();
    const left = await this.launcher.adoptLeft();
    for (const line of resumingNotes(left.adopted.size, left.interrupted.length)) this.progress.note(line);
    const who = this.opts.who;
    await this.loop.committer.write(async (tx) => {
      await interruptRuns(tx, left.interrupted, 'the orchestrator stopped while this operation ran');
      // Runs left `running` mean the last apply died with them out (kill -9, a lost host).
      if (who && (left.adopted.size || left.interrupted.length)) await recordEvent(tx, who, EVENTS.runsAdopted, adoptedText(left.adopted.size, left.interrupted.length));
    });
    await this.launcher.loadResumed();
    // Counts, not steps: the steps themselves are read a window at a time (store/cursor.ts).
    const { failed, total } = await failedAndTotal(db);
    this.opts.sized?.(total);
    this.control.counted(failed, total);
    const snap = (await controlSnapshot(db, CONTROL_EVENTS))!;
    this.stages.windows = new Map(snap.windows);
    this.loop.pacer.begin(snap.rates, this.progress);
    this.loop.pacer.wake = () => this.stages.pump();
    this.control.setBudget(snap.maxFailures, false);
    this.progress.begin?.({
      type: this.opts.type,
      states: this.opts.states,
      stages: stageCounts(await stageStateCounts(db), this.stages.windows),
      startedMs: started,
      firstStartedMs: this.firstStartedMs,
      stateTimeoutMs: this.opts.stateTimeoutMs,
    });
    await this.takeover.showFleet();
    const aborting = snap.state === 'abort requested' || snap.state === 'aborting';
    if (aborting) await this.control.takeUpAbort((fn) => this.loop.committer.write(fn), snap.abortNow !== null); // what was cut off is not run again
    if (snap.state === 'paused') this.control.setPaused(true);
    this.requests = watchRequests(this.rt, { control: this.control, loop: this.loop, stages: this.stages, fleet: this.fleet, takeover: this.takeover }, this.opts, snap);
    this.requests.start();
    startedUp();
    const stopped = new Promise<void>((resolve) => (this.hardStop = resolve));
    try {
      await Promise.race([this.stages.runAll(), stopped]);
      // Stopped without waiting (a second Ctrl-C): answers already received are still committed,
      // under the same stop rule (nothing new starts). The operations still out run again on resume.
      if (this.control.interruptedBy && !this.control.fatal) await this.loop.finalFlush(this.control.interruptedBy);
    } finally {
      // Every way out (end, signal, fatal error) leaves no timer that would keep the process alive.
      this.requests.stop();
      this.stages.stop();
      this.control.clear();
      this.launcher.stop();
      this.fleet.clear();
      this.loop.procs.stop();
      this.loop.details.stop();
      this.fleet.retire();
    }
    if (this.control.fatal) throw this.control.fatal;
    this.launcher.deadlines.stop();
    return await finishRun(db, (fn) => this.loop.committer.write(fn), this.progress, {
      signal: this.control.interruptedBy,
      aborting: this.control.aborting,
      paused: this.control.paused,
      failedSeen: this.control.failedSeen,
      abandoned: this.registry.list().map((w) => w.historyId),
      clock: this.rt.clock, startedMs: started, startedMono,
      firstStartedMs: this.firstStartedMs,
      peakInFlight: this.stages.peak,
      maxWindow: this.stages.maxWindow,
      who: this.opts.who,
      shared: this.fleet.shared,
    });
  }

  /** This worker's lease was renewed: the gone are taken over between commits and taken in, and the views see the fleet. */
  async beat(takeOver: () => Promise<TakenOver[]>): Promise<void> {
    await this.loop.between(async () => this.takeover.takenOver(await takeOver()));
    await this.takeover.showFleet();
  }

  /**
   * First Ctrl-C / SIGTERM drains; a second stops waiting: for the runs in flight, and for a store
   * another session holds locked (every wait for it from now on, the start's and the end's too,
   * ends within FINAL_FLUSH_MS with what a kill leaves).
   */
  interrupt(signal: NodeJS.Signals): void {
    const again = this.control.interruptedBy !== null;
    this.control.interrupt(signal);
    if (again) void this.loop.committer.stopWaiting(this.rt.clock.mono() + FINAL_FLUSH_MS, signal).catch(() => {});
  }

  /** A read of the apply's that another session's lock kept waiting (Db.waitForLocks): the committer's busy rule. */
  waitForStore(err: unknown): Promise<void> {
    return this.loop.committer.waitBusy(err);
  }

  /** A write beside the orchestrator's own (the heartbeat) failed: a busy store is waited for, a full or corrupt one stops the apply. */
  async writeFailed(err: Error): Promise<void> {
    if (this.loop.committer.isBusy(err)) return;
    if (faultOf(err)) await this.control.fail(err);
  }

  /** Stop at once, from outside (the lock was lost): nothing more is written; run() throws `err`. */
  async stopWith(err: Error): Promise<void> {
    await this.control.fail(err);
  }

  /** Runs were left to the worker that took this one over: the driver must not stop them as it closes. */
  get leftGoing(): boolean {
    return this.control.leftGoing;
  }
}
