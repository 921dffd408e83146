/**
 * The apply loop (SPEC §1, §6). It alone owns the registry of running workers: it adds an entry
 * when it starts a state operation, and it alone removes or replaces it when it has committed how
 * that operation ended. A driver only performs the operation and reports; a report that does not
 * match the registry's entry (a late answer after a timeout) changes nothing.
 *
 * Flow, all event-driven: reports are queued; one flush per event-loop turn decides every queued
 * report (src/domain/control.ts says what a report means, src/domain/transition.ts builds the
 * change), applies the one stop rule to the batch, commits it through the committer (one fenced
 * transaction, one busy rule: committer.ts), and only then starts the operations the batch opened.
 * Around it, none of which sees the registry: each stage's window (window.ts, p-limit fed from the
 * file), the deadlines (deadlines.ts), the requests from other shells (requests.ts), the runs an
 * earlier process left (adoption.ts), the processes runs started (run-processes.ts) and finishing
 * (finish.ts). A subcloud holds its slot from its first state to its end, and stage N+1 starts
 * when every subcloud of stage N has ended and stage N's gate has let it (stage-gate.ts).
 */
import { formatDuration } from '../domain/durations.js';
import { decideReport, failureLimit, gate, NO_NEW_SUBCLOUDS, opensNewSubcloud, stopRule, type Gate, type ReportResult } from '../domain/control.js';
import { advance, closing, defer, fail, NEXT_ATTEMPT, runAgain, startRun, type Transition } from '../domain/transition.js';
import { STEP_DEFERRED } from '../domain/deferral.js';
import { formatTimestamp } from '../domain/time.js';
import { abortDeferredSteps, DEFERRED_RUN_PREFIX } from '../store/deferrals.js';
import { Deferrals } from './deferrals.js';
import { TYPES, type StrategyType } from '../domain/types.js';
import type { Driver, OperationRequest, OperationResult } from '../drivers/driver.js';
import { readLabels, type Labels } from '../domain/inventory.js';
import { fieldTexts } from '../domain/fields.js';
import { subcloudById, subcloudsLabelled } from '../store/subclouds.js';
import { interruptedLast, recordRunDetails, recordRunProcesses, retryBudgets, runsStillRunning, type RetryBudget, type RunDetailsRow } from '../store/runs.js';
import type { ExtraArgs } from '../domain/options.js';
import { now, parseTime, timeIn } from '../store/clock.js';
import type { Db } from '../store/open.js';
import { casStrategyState, controlSnapshot, strategyState } from '../store/strategy.js';
import { abortInitialSteps, interruptRuns } from '../store/transitions.js';
import { failedAndTotal, openStages, StageCursor, type CursorStep } from '../store/cursor.js';
import { applyFaultError, faultOf } from '../store/faults.js';
import { ConfigBook } from '../domain/strategy-config.js';
import { getDefaultConfig, subcloudOptions } from '../store/strategy-config.js';
import type { ApplyInfo, ProgressSink } from './progress.js';
import { firstStartedAt, stageStateCounts } from '../store/status.js';
import { finishRun } from './finish.js';
import { RunProcesses } from './run-processes.js';
import { RunDetails, type DetailsLine } from './run-details.js';
import { Deadlines } from './deadlines.js';
import { ExternalRequests } from './requests.js';
import { StageWindow } from './window.js';
import { MaintenanceWait } from './maintenance-wait.js';
import { Committer, BUSY_RETRY_MS } from './committer.js';
import { adoptLeftRuns, type Adopted } from './adoption.js';
import type { CommitHooks, CostCounters } from './test-hooks.js';
import { setLongTimeout, type Timer } from '../platform/timers.js';
import { hostName, type Actor } from '../platform/who.js';
import { adoptedText, EVENTS } from '../domain/events.js';
import { recordEvent } from '../store/events.js';
import { StageGates, type StageBudget } from './stage-gate.js';
import { liveWorkers, LostLeaseError, type TakenOver, type WorkerLease } from './workers.js';
import { claimSteps, inFlightElsewhere, leadWorker, shareOfWindow, stageElsewhere, stepFences, type ClaimAsk, type Refusal } from '../store/workers.js';

/** How soon a worker whose claims found the stage's window full (across workers) asks again. */
const CLAIM_RETRY_MS = 250;

/** The labels of a subcloud that has none the driver reads. */
const NO_LABELS: Labels = Object.freeze({});

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
  /** Test hooks of the commit path (test-hooks.ts); null or absent in real use. */
  hooks?: CommitHooks | null;
  /** Exact cost counters (test-hooks.ts), for the tests that guard the cost per transition. */
  counters?: CostCounters | null;
  /** Who runs this apply, for the event record (none: nothing is recorded). */
  who?: Actor;
  /** The clock maintenance windows are decided by (test-hooks.ts `windowClock`); Date.now if absent. */
  windowClock?: () => number;
  /**
   * One of several workers on the strategy (a PostgreSQL store, workers.ts): each subcloud is
   * claimed in the commit of its first operation here, within its stage's window counted across
   * all workers; a stage ends when every worker's subclouds of it have ended. Absent: the one
   * orchestrator of its file.
   */
  shared?: WorkerLease | null;
}

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

const keyOf = (stepId: number, state: string) => `${stepId}\u0000${state}`;

export class Orchestrator {
  /** This machine's name, recorded with each run's process: its log is on that host. */
  private readonly host = hostName();
  /** The registry (SPEC §1): created, read and changed here only. Never handed to anyone. */
  private readonly workers = new Map<number, Worker>();
  private readonly slots = new Map<number, Slot>();
  private readonly committer: Committer;
  private pending: Transition[] = [];
  private reports: Report[] = [];
  private flushScheduled = false;
  /** The commit being made opens a new subcloud (its fence then reads the file's state). */
  private opensNew = false;
  private nextOpId = 1;
  /** (step, state) whose last run was cut off: its next run is told so (DCM_RESUMED). */
  private resumed = new Set<string>();
  /** Retries used by each (step, state) in flight, and a backoff a resumed one must still wait out (from the history). */
  private budgets = new Map<string, RetryBudget>();
  /** Runs an earlier orchestrator left going, adopted by the driver: waited for once their subcloud has its slot. */
  private adopted = new Map<number, Adopted>();
  private readonly adoptedWorkers = new Map<number, Worker>();
  /** Retries waiting out their backoff: the subcloud keeps its slot meanwhile. */
  private retryTimers = new Set<Timer>();
  /** Processes started and not yet recorded in their history rows (run-processes.ts). */
  private readonly procs = new RunProcesses(() => this.scheduleFlush());
  /** Progress lines of runs in flight, waiting to become their steps' details (run-details.ts). */
  private readonly details = new RunDetails(() => this.scheduleFlush());

  /** The inputs of the one gate (domain/control.ts): each only ever switches on, but `paused`. */
  private noNewSubclouds = false;
  private noNewOperations = false;
  private paused = false;
  private aborting = false;
  private failedSeen = false;
  /** Steps failed so far, and the budget (SPEC §4): no new subcloud once it is reached. */
  private failedCount = 0;
  private totalSteps = 0;
  /** When the strategy's first step started (an earlier process's, on a resume). */
  private firstStartedMs: number | undefined;
  private budgetText: string | null = null;
  private failureLimit: number | null = null;
  private budgetSaid = false;
  private interruptedBy: NodeJS.Signals | null = null;
  private hardStop: (() => void) | null = null;
  private drainTimer: Timer | null = null;
  /** Set once run() is done: a late answer or a queued flush must change nothing any more. */
  private stopped = false;
  private fatal: Error | null = null;
  private peak = 0;
  /** The largest window of a stage in which a subcloud started (for the summary). */
  private maxWindow = 0;
  private readonly deadlines: Deadlines;
  private requests: ExternalRequests | null = null;
  /** The stage running now, its window, and every stage's window as the file says. */
  private stage: number | null = null;
  private window: StageWindow | null = null;
  private windows = new Map<number, number>();
  /** The strategy-config options of each subcloud, read once when the run starts. */
  private config = new ConfigBook(undefined, []);
  /** Stage gates (stage-gate.ts): the running stage's own budget, and the gate between stages. */
  private gates: StageGates | null = null;
  private stageBudget: StageBudget | null = null;
  /** Steps whose site did not answer, waiting for their next try (deferrals.ts); made by run(). */
  private deferrals: Deferrals | null = null;
  /** The groups' maintenance windows (null: no group has one). */
  private maintenance: MaintenanceWait | null = null;

  // --- One of several workers (opts.shared); unused otherwise ---
  private readonly shared: WorkerLease | null;
  /** The claims the commit being made asks for, and what it was granted (step -> its fence). */
  private claiming: ClaimAsk[] = [];
  private granted = new Map<number, number>();
  /** The claims of the commit being made that were refused: their transitions are left out of it. */
  private refusals = new Map<number, Refusal>();
  /** Each claimed step's claim count, for its runs' DCM_FENCE. */
  private fences = new Map<number, number>();
  /** The steps this worker holds, claimed or adopted: their next operations need no claim. */
  private readonly mine = new Set<number>();
  /** The stage's window is full across the workers: no subcloud takes a slot until this clears. */
  private claimBlocked = false;
  /** Each live worker's `--max-local` (null: none), as the last heartbeat read them: the share's input. */
  private liveCaps: (number | null)[] = [null];
  private claimTimer: Timer | null = null;
  private cursor: StageCursor | null = null;
  /** Wakes a worker waiting for the others (a stage's end, the strategy's end). */
  private sharedWake: (() => void) | null = null;

  constructor(
    private readonly db: Db,
    private readonly driver: Driver,
    private readonly progress: ProgressSink,
    private readonly opts: OrchestratorOptions,
  ) {
    this.shared = opts.shared ?? null;
    const fence = () => {
      opts.fence?.();
      // Read once a commit, and only by one that starts subclouds: each read is a round trip on a server.
      const state = this.opensNew || this.claiming.length ? strategyState(db) : undefined;
      if (this.opensNew && NO_NEW_SUBCLOUDS.includes(state ?? '')) throw new StopInFile();
      if (this.claiming.length) {
        // One of several workers: the subclouds this commit starts are claimed in it, or none is.
        if (state !== 'applying') throw new StopInFile();
        const r = claimSteps(db, this.shared!.id, this.shared!.maxLocal, this.claiming);
        this.granted = r.granted;
        // The refused are left out of this commit, not the commit given up: a rolled-back try
        // would hold the writers' lock once more for the same batch, and every worker waits on it.
        this.refusals = r.refused;
        if (r.refused.size) return new Set(r.refused.keys());
      }
    };
    this.committer = new Committer(db, opts.type, fence, (t) => progress.warn(t), opts.hooks ?? null, opts.counters ?? null);
    this.deadlines = new Deadlines(
      opts.stateTimeoutMs,
      (stepId, opId) => this.workers.get(stepId)?.opId === opId,
      (stepId, opId) => {
        this.abandon(this.workers.get(stepId)!);
        this.report(stepId, opId, { kind: 'timeout' });
      },
    );
  }

  /** Run the strategy (already `applying`, paused, or being resumed) to its end; returns the exit code. */
  async run(): Promise<number> {
    const started = Date.now();
    // A strategy resumed (or retried) was first started by an earlier process: elapsed counts from then.
    const first = firstStartedAt(this.db);
    this.firstStartedMs = first === null ? undefined : Math.min(started, parseTime(first));
    this.config = new ConfigBook(getDefaultConfig(this.db), subcloudOptions(this.db));
    this.readLabelled();
    this.deferrals = new Deferrals(this.db, this.opts.extra, this.firstStartedMs ?? started, (step) => {
      if (step.stage === this.stage) this.window?.add(step);
    });
    this.budgets = retryBudgets(this.db);
    this.maintenance = MaintenanceWait.load(this.db, this.opts.windowClock ?? Date.now);
    // Each adopted run's worker is made once, here: the request the driver keeps (its abort signal
    // above all) is that worker's, so a second Ctrl-C or a fatal stop reaches the run through it.
    const left = this.adoptLeft();
    this.adopted = left.adopted;
    if (left.adopted.size) {
      this.progress.note(`resuming: ${left.adopted.size} run(s) left by the last apply are still going or ended meanwhile; they are not run again`);
    }
    if (left.interrupted.length) this.progress.note(`resuming: ${left.interrupted.length} operation(s) were interrupted and will run again`);
    const who = this.opts.who;
    await this.committer.write(() => {
      interruptRuns(this.db, left.interrupted, 'the orchestrator stopped while this operation ran');
      // Runs left `running` mean the last apply died with them out (kill -9, a lost host).
      if (who && (left.adopted.size || left.interrupted.length)) {
        recordEvent(this.db, who, EVENTS.runsAdopted, adoptedText(left.adopted.size, left.interrupted.length));
      }
    });
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
      firstStartedMs: this.firstStartedMs,
      stateTimeoutMs: this.opts.stateTimeoutMs,
    });
    this.showFleet();
    if (snap.state === 'abort requested' || snap.state === 'aborting') await this.committer.write(() => this.abortWrite());
    if (snap.state === 'abort requested' || snap.state === 'aborting') this.aborted(0);
    if (snap.state === 'paused') this.setPaused(true);

    this.requests = new ExternalRequests(
      this.db,
      {
        abort: () => {
          if (this.aborting) return;
          // Seen only once its effect has committed: a busy file throws, and the poll asks again.
          const n = this.committer.tryWrite(() => this.abortWrite());
          this.aborted(n);
        },
        pause: (on) => this.setPaused(on),
        window: (stage, w) => this.setWindow(stage, w),
        budget: (text) => this.setBudget(text, true),
        fail: (err) => this.fail(err),
        busy: (err) => this.committer.isBusy(err),
        ended: () => {
          // Another worker wrote the strategy's end: nothing more starts here, and this one ends too.
          this.noNewSubclouds = true;
          this.noNewOperations = true;
          this.window?.pump();
          this.sharedWake?.();
        },
        changed: () => {
          // One of several workers: the failures the others committed count toward the budget.
          if (this.shared) this.countFailuresElsewhere();
          if (this.stageBudget && this.gates?.refreshBudget(this.stageBudget)) this.window?.pump();
          // A gate waiting out a soak looks again: `strategy update` may have changed it.
          this.gates?.wake();
        },
      },
      { pollMs: this.opts.pollMs, checkFile: this.opts.checkFile },
      snap,
    );
    this.requests.start();
    const stopped = new Promise<void>((resolve) => (this.hardStop = resolve));
    try {
      await Promise.race([this.runAll(), stopped]);
      // Stopped without waiting (a second Ctrl-C): answers already received are still committed,
      // under the same stop rule (nothing new starts). The operations still out run again on resume.
      if (this.interruptedBy && !this.fatal) await this.finalFlush();
    } finally {
      // Every way out (end, signal, fatal error) leaves no timer that would keep the process alive.
      this.requests.stop();
      this.gates?.stop();
      this.drainTimer?.clear();
      this.deadlines.stop();
      this.claimTimer?.clear();
      for (const t of this.retryTimers) t.clear();
      this.retryTimers.clear();
      this.deferrals?.clear();
      this.procs.stop();
      this.details.stop();
      this.stopped = true;
      this.shared?.retire();
    }
    if (this.fatal) throw this.fatal;
    return await this.finish(started);
  }

  /**
   * Runs an earlier orchestrator left going, each with the worker made for it once, here: the
   * request the driver keeps (its abort signal above all) is that worker's, so a second Ctrl-C or
   * a fatal stop reaches the run through it. One of several workers adopts only the runs of the
   * steps it holds (workers.ts gave it those of a worker gone from its host), and not twice.
   */
  private adoptLeft(): ReturnType<typeof adoptLeftRuns> {
    // A slot not started yet waits for its first claim here: that subcloud is adopted all the same.
    const skip = (id: number) => this.adopted.has(id) || this.slots.get(id)?.started === true;
    const only = this.shared ? { owner: this.shared.id, skip } : undefined;
    const left = adoptLeftRuns(
      this.db,
      this.driver,
      (step, l) => {
        const worker = this.newWorker(step, l.state, l.attempt, l.historyId);
        this.adoptedWorkers.set(step.id, worker);
        return this.request(worker);
      },
      only,
    );
    // One of several workers: the next runs of a subcloud adopted carry the fence its takeover gave it.
    if (this.shared) for (const [id, fence] of stepFences(this.db, [...left.adopted.keys()])) this.fences.set(id, fence);
    return left;
  }

  /** This worker's lease was renewed: what it took over is taken in, and the views see the fleet. */
  beat(taken: readonly TakenOver[]): void {
    if (taken.length) this.takenOver(taken);
    this.showFleet();
  }

  /**
   * One of several workers: its share of the window follows the workers there are, and the
   * progress views count every worker's steps, not only this one's (read with each heartbeat, a
   * few statements every few seconds).
   */
  private showFleet(): void {
    if (!this.shared || this.stopped || this.fatal) return;
    try {
      const live = liveWorkers(this.db);
      this.followShare(live.map((w) => w.max_local));
      this.progress.fleet?.({
        workers: live.length,
        inFlightElsewhere: inFlightElsewhere(this.db, this.shared.id),
        counts: stageStateCounts(this.db),
      });
    } catch (err) {
      // A view is not worth a stop: a busy store shows the fleet at the next beat.
      if (!this.committer.isBusy(err)) this.fail(err as Error);
    }
  }

  /**
   * Workers were taken over by this one's heartbeat (workers.ts): the runs it now holds are
   * adopted, those cut off are closed, and the running stage is read again for what was let go.
   */
  takenOver(taken: readonly TakenOver[]): void {
    if (this.stopped || this.fatal) return;
    for (const t of taken) {
      this.progress.note(
        `took over the worker pid ${t.worker.pid} on ${t.worker.host} (${t.why}): ${t.adopted} run(s) adopted, ${t.interrupted} interrupted to run again`,
      );
    }
    // Runs closed as interrupted run again told so (DCM_RESUMED), once the stage is read again.
    const readAgain = () => {
      try {
        for (const key of interruptedLast(this.db)) this.resumed.add(key);
      } catch (err) {
        this.fail(err as Error);
        return;
      }
      this.rescan();
    };
    if (taken.some((t) => t.adopted > 0)) {
      try {
        const left = this.adoptLeft();
        for (const [id, a] of left.adopted) {
          this.adopted.set(id, a);
          if (this.slots.has(id)) {
            // Read before it was taken over and waiting for its first claim, which would now be
            // refused (or start a second run): held back instead, its slot runs the adopted run.
            this.pending = this.pending.filter((t) => t.stepId !== id);
            this.release(id, false);
          } else if (a.step.stage === this.stage) this.window?.add(a.step);
        }
        if (left.interrupted.length) {
          // Cut off (their process is gone): closed first, so that the next start of their state
          // is not refused for a run still `running`.
          void this.committer
            .write(() => interruptRuns(this.db, left.interrupted, 'its worker stopped while this operation ran'))
            .then(readAgain, (err: Error) => this.fail(err));
          return;
        }
      } catch (err) {
        this.fail(err as Error);
        return;
      }
    }
    readAgain();
  }

  /** The strategy's failed steps as the store has them, every worker's: the budget counts them all. */
  private countFailuresElsewhere(): void {
    const { failed } = failedAndTotal(this.db);
    if (failed <= this.failedCount) return;
    this.failedCount = failed;
    this.failedSeen = true;
    if (this.budgetSpent()) this.sayBudgetSpent('a step of another worker');
    this.window?.pump();
  }

  /** Read the running stage again (another worker let steps go), and wake a wait for the others. */
  private rescan(): void {
    this.cursor?.rewind();
    this.window?.rescan();
    this.sharedWake?.();
  }

  /** Wait a poll's length, or until woken (a takeover, a stop). */
  private waitForOthers(): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setLongTimeout(done, this.opts.pollMs ?? 250);
      const self = this;
      function done(): void {
        t.clear();
        if (self.sharedWake === done) self.sharedWake = null;
        resolve();
      }
      this.sharedWake = done;
    });
  }

  /**
   * One of several workers ends the strategy only once no other worker has a subcloud in flight:
   * until then the end is not decided (their failures count, an abort waits for them).
   */
  private async othersDone(): Promise<void> {
    if (!this.shared) return;
    while (!this.interruptedBy && !this.fatal && inFlightElsewhere(this.db, this.shared.id) > 0) await this.waitForOthers();
  }

  /** The stages to their end; one of several workers goes round again for steps a worker gone let go of. */
  private async runAll(): Promise<void> {
    for (;;) {
      await this.runStages();
      if (!this.shared) return;
      await this.othersDone();
      if (this.interruptedBy || this.fatal || this.gate().stopping || openStages(this.db).length === 0) return;
    }
  }

  private async runStages(): Promise<void> {
    const gates = (this.gates = this.stageGates());
    // Every stage from the first open one: a stage that ended while its gate was not passed yet
    // (killed in a soak, at a pause) still has its gate to go through.
    const open = openStages(this.db);
    const stages = gates.stagesFrom(open);
    for (const [i, stage] of stages.entries()) {
      for (let again = open.includes(stage); ; again = true) {
        if (again) await this.runStage(stage, gates);
        if (this.interruptedBy || this.fatal) return;
        let next;
        try {
          next = await gates.after(stage, stages[i + 1] ?? null);
        } catch (err) {
          // A gate's write refused by the fence, a file fault: as any of the orchestrator's writes.
          this.fail(err as Error);
          return;
        }
        if (next !== 'again') break;
      }
    }
  }

  private async runStage(stage: number, gates: StageGates): Promise<void> {
    const size = this.windows.get(stage) ?? 1;
    this.stage = stage;
    this.stageBudget = gates.budget(stage);
    this.progress.stageStarted?.(stage, size);
    for (;;) {
      await this.runStagePass(stage, size);
      // One of several workers: the stage ends when every worker's subclouds of it have ended.
      // Those another worker let go of (it was taken over) are this pass's to find.
      if (!this.shared || this.interruptedBy || this.fatal || this.gate().stopping) break;
      if (stageElsewhere(this.db, this.shared.id, stage).open === 0) break;
      await this.waitForOthers();
    }
    this.window = null;
    this.cursor = null;
    this.stageBudget = null;
    // Ended with steps still deferred only when nothing new may start: they stay so in the file.
    this.deferrals?.clear();
  }

  /** One pass of a window over the stage's open steps (the only one, but for one of several workers). */
  private async runStagePass(stage: number, size: number): Promise<void> {
    const cursor = (this.cursor = new StageCursor(this.db, stage, this.shared?.id));
    this.window = new StageWindow(this.localWindow(this.windows.get(stage) ?? size), {
      fetch: (limit) => cursor.next(limit),
      blocked: () => this.claimBlocked,
      gate: () => this.gate(),
      run: (step) => this.runSubcloud(step),
      failed: (err) => this.fail(err),
      deferred: () => this.deferrals?.waiting ?? 0,
      hold: (step) =>
        this.maintenance?.decide(
          step.subcloudId,
          (line) => this.progress.note(line),
          (group, text) => this.progress.windowWait?.(group, text),
        ) ?? null,
    });
    await this.window.run();
  }

  /**
   * The window this process fills: the stage's, or for one of several workers its `--max-local`
   * or its share (store/workers.ts), so that it does not ask for claims it would be refused.
   */
  private localWindow(size: number): number {
    if (!this.shared) return size;
    return Math.min(size, this.shared.maxLocal ?? shareOfWindow(size, this.liveCaps));
  }

  /** The live workers changed (a heartbeat saw them): the window this worker fills follows its share. */
  private followShare(caps: (number | null)[]): void {
    if (caps.length === this.liveCaps.length && caps.every((c, i) => c === this.liveCaps[i])) return;
    this.liveCaps = caps;
    if (this.stage !== null && this.window) this.window.resize(this.localWindow(this.windows.get(this.stage) ?? 1));
  }

  /** The stage's window is full across the workers: no subcloud takes a slot here until a look later. */
  private blockClaims(): void {
    this.claimBlocked = true;
    if (this.claimTimer) return;
    this.claimTimer = setLongTimeout(() => {
      this.claimTimer = null;
      this.claimBlocked = false;
      this.window?.pump();
    }, CLAIM_RETRY_MS);
  }

  private unblockClaims(): void {
    this.claimTimer?.clear();
    this.claimTimer = null;
    this.claimBlocked = false;
  }

  /** The gate runner's view of this orchestrator (stage-gate.ts never sees the registry). */
  private stageGates(): StageGates {
    return new StageGates(this.db, {
      syncPaused: () => {
        this.setPaused(strategyState(this.db) === 'paused');
        return this.paused;
      },
      ending: () => this.noNewSubclouds || this.fatal !== null || this.interruptedBy !== null || this.budgetSpent(),
      write: (fn) => this.committer.write(fn),
      pause: (reason) => {
        this.setPaused(true, true);
        this.progress.note(`paused: ${reason}`);
        // The poll learns the state this process wrote, so that a resume is told from it.
        this.requests?.lookNow();
      },
      note: (text) => this.progress.note(text),
      type: this.opts.type,
      who: this.opts.who,
      leads: this.shared ? () => leadWorker(this.db) === this.shared!.id : undefined,
    });
  }

  /** The one gate (domain/control.ts), asked before every start and at every commit. */
  private gate(): Gate {
    return gate({
      paused: this.paused,
      noNewSubclouds: this.noNewSubclouds || this.fatal !== null,
      noNewOperations: this.noNewOperations || this.fatal !== null,
      failed: this.failedCount,
      limit: this.failureLimit,
      stageHeld: this.stageBudget?.exceeded() ?? false,
    });
  }

  private budgetSpent(): boolean {
    return this.failureLimit !== null && this.failedCount >= this.failureLimit;
  }

  /** Resolves true when the subcloud has ended, false when it was held back before it started. */
  private runSubcloud(step: CursorStep): Promise<boolean> {
    // One of several workers reads its stage again (a rescan): a subcloud it runs already is skipped.
    if (this.slots.has(step.id)) return Promise.resolve(true);
    return new Promise<boolean>((release) => {
      this.slots.set(step.id, { step, release, started: false });
      this.peak = Math.max(this.peak, this.slots.size);
      this.maxWindow = Math.max(this.maxWindow, this.window?.window ?? 0);
      const adopted = this.adopted.get(step.id);
      if (adopted) {
        // Still going (or ended while no dcm ran): wait for it, never start it again.
        this.adopted.delete(step.id);
        this.slots.get(step.id)!.started = true;
        if (this.shared) this.mine.add(step.id);
        const worker = this.adoptedWorkers.get(step.id)!;
        this.adoptedWorkers.delete(step.id);
        worker.startedMs = Date.now();
        this.workers.set(step.id, worker);
        this.awaitResult(worker, adopted.result);
        return;
      }
      if (step.state === STEP_DEFERRED) {
        // Deferred by this process or an earlier one: tried again once due, from the file's record.
        const d = this.deferrals!.resumeOf(step);
        if (d && 'state' in d) this.queue(startRun(step, STEP_DEFERRED, d.state, NEXT_ATTEMPT));
        else this.release(step.id, true);
        return;
      }
      const first = step.state === 'initial' ? this.opts.states[0] : step.state;
      // Killed while a retry waited out its backoff: the backoff goes on from the history.
      const due = this.budgets.get(keyOf(step.id, first))?.dueMs ?? null;
      if (due !== null && due > Date.now() && !this.resumed.has(keyOf(step.id, first))) {
        this.slots.get(step.id)!.started = true;
        this.retryLater(step, first, due - Date.now());
        return;
      }
      this.queue(startRun(step, step.state, first, NEXT_ATTEMPT));
    });
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
      if (!this.commitPending()) {
        // Another writer holds the file past the busy timeout: nothing was committed and nothing
        // it opens has started; it is all kept, and tried again shortly (under the stop rule anew).
        this.flushScheduled = true;
        setTimeout(() => this.flush(), BUSY_RETRY_MS);
      }
    } catch (err) {
      this.fail(err as Error);
    }
  }

  /**
   * The one commit path for transitions: the stop rule on the whole batch, one fenced commit with
   * the processes to record, then (only then) the starts it opened. False: the file was busy.
   */
  private commitPending(lookAgain = true): boolean {
    const batch = this.applyStopRule(this.pending);
    this.pending = [];
    // A batch that opens a new subcloud reads the strategy's state inside its transaction: a
    // pause or an abort committed since the last poll stops it there, not up to a poll later.
    const opensNew = batch.some((t) => {
      const slot = this.slots.get(t.stepId)!;
      return opensNewSubcloud(t, { started: slot.started, resumed: resumedStep(slot.step) });
    });
    const procs = this.procs.list;
    const alone = batch.length === 0;
    const procsDue = this.procs.overdue || (this.procs.waiting && this.interruptedBy !== null);
    if (alone && !procsDue && !this.details.overdue) return true;
    // Progress lines ride along (a second after their subcloud's last); only runs still in flight.
    const lines = this.details.take((stepId, opId) => this.workers.get(stepId)?.opId === opId);
    if (alone && !procsDue && lines.length === 0) return true;
    const rows = lines.map((l) => this.detailsRow(l));
    let written = 0;
    const also =
      procs.length || rows.length
        ? () => {
            if (procs.length) recordRunProcesses(this.db, procs, this.host);
            if (rows.length) written = recordRunDetails(this.db, rows);
          }
        : undefined;
    try {
      this.procs.stop();
      this.opensNew = opensNew;
      // One of several workers claims each subcloud in the commit of its first operation here.
      if (this.shared) this.claiming = this.claimsOf(batch);
      this.granted = new Map();
      this.refusals = new Map();
      try {
        this.committer.tryCommit(batch, also);
      } finally {
        this.opensNew = false;
        this.claiming = [];
      }
    } catch (err) {
      if (err instanceof StopInFile) {
        // Nothing was written: the stop is carried out now (its handler runs), and the batch is
        // tried once more under the stop rule anew, its new subclouds held back. Should the stop's
        // own write find the file busy, the batch waits like a busy one.
        this.pending = batch.concat(this.pending);
        if (!lookAgain || !this.requests) return false;
        this.requests.lookNow();
        return this.commitPending(false);
      }
      if (!this.committer.isBusy(err)) throw err;
      this.pending = batch.concat(this.pending);
      return false;
    }
    for (const [stepId, fence] of this.granted) {
      this.fences.set(stepId, fence);
      this.mine.add(stepId);
    }
    if (procs.length) this.procs.recorded();
    if (lines.length) this.detailsCommitted(lines, alone && !procsDue, written);
    // The subclouds whose claim was refused were left out of the commit; they are let go of
    // (another worker has one, or the stage's window is full across the workers: it waits in its place).
    const refusals = this.refusals;
    this.refusals = new Map();
    for (const [stepId, why] of refusals) this.refused(stepId, why);
    this.committed(refusals.size ? batch.filter((t) => !refusals.has(t.stepId)) : batch);
    return true;
  }

  /** The subclouds whose first operation here a batch opens: each is claimed in its commit. */
  private claimsOf(batch: readonly Transition[]): ClaimAsk[] {
    const out: ClaimAsk[] = [];
    for (const t of batch) {
      const slot = this.slots.get(t.stepId)!;
      if (!this.mine.has(t.stepId)) out.push({ id: t.stepId, stage: slot.step.stage, state: slot.step.state });
    }
    return out;
  }

  /** A claim refused: `taken` is another worker's subcloud (ended, for this pass); `full` waits in its place. */
  private refused(stepId: number, why: Refusal): void {
    if (why === 'full') {
      this.blockClaims();
      this.release(stepId, false);
    } else this.release(stepId, true);
  }

  private detailsRow(l: DetailsLine): RunDetailsRow {
    const w = this.workers.get(l.stepId)!;
    return { stepId: l.stepId, state: w.state, historyId: w.historyId, text: l.text };
  }

  /** Progress lines committed as details: now they may be seen. */
  private detailsCommitted(lines: DetailsLine[], alone: boolean, written: number): void {
    this.details.committed(lines, alone);
    if (this.opts.counters) this.opts.counters.details += written;
    for (const l of lines) this.progress.details?.(this.workers.get(l.stepId)!.step.cloud, l.text);
  }

  /** Committed: now it may be seen, and the operations it opened may start. */
  private committed(batch: Transition[]): void {
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
      else {
        this.release(t.stepId, true);
        // Its slot is free for the next site: it waits for its next try, apart.
        if (t.to === STEP_DEFERRED) this.deferrals!.committed(slot.step);
      }
    }
  }

  /**
   * The one stop rule (domain/control.ts `stopRule`), applied to every batch at every attempt to
   * commit it: once a stop is decided, nothing starts, whatever batch or queue it was in. A first
   * start held back gives its slot back (its window keeps its place); a start stripped from a
   * transition leaves the step mid-state for `apply` to resume.
   */
  private applyStopRule(batch: Transition[]): Transition[] {
    const g = this.gate();
    if (g.newSubclouds && g.operations) return batch;
    const out: Transition[] = [];
    for (const t of batch) {
      const slot = this.slots.get(t.stepId)!;
      const resumed = resumedStep(slot.step);
      const verdict = stopRule(t, g, { started: slot.started, resumed });
      if (verdict === 'keep') out.push(t);
      else if (verdict === 'hold') this.release(t.stepId, slot.started);
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

  /** After a second Ctrl-C: what was answered is committed (the stop rule holds every start). */
  private async finalFlush(): Promise<void> {
    this.decideReports();
    while (this.pending.length || this.procs.waiting) {
      if (this.commitPending()) break;
      await new Promise((r) => setTimeout(r, BUSY_RETRY_MS));
    }
  }

  /** Turn each report into the transition it calls for; stale reports change nothing. */
  private decideReports(): void {
    const reports = this.reports;
    this.reports = [];
    for (const r of reports) {
      const w = this.workers.get(r.stepId);
      if (!w || w.opId !== r.opId) continue; // answered after its timeout: the step moved on
      this.workers.delete(r.stepId);
      // Its run has ended: a progress line of it still waiting is never written.
      this.details.forget(r.stepId);
      const { step, state } = w;
      const d = decideReport(state, this.opts.states, r.result, this.opts.stateTimeoutMs);
      const durationMs = r.finishedMs - w.startedMs;
      const key = keyOf(step.id, state);
      if (d.kind === 'again') {
        // The run is over without a result: its row closes (saying when the next attempt is due,
        // so that a resume waits it out), and the state runs again as a new attempt once the
        // backoff is over, through this same registry.
        let retryAt: string | undefined;
        if (d.outcome === 'interrupted') this.resumed.add(key);
        else {
          const b = this.budgets.get(key) ?? { failures: 0, dueMs: null };
          b.failures++;
          this.budgets.set(key, b);
          retryAt = timeIn(d.delayMs);
        }
        const close = closing(w.historyId, d.outcome, r.finishedAt, d.reason, undefined, retryAt);
        this.pending.push(runAgain(step, state, d.details, close, d.delayMs));
      } else if (d.kind === 'defer') {
        const dd = this.deferrals!.decide(step, state, d.reason);
        if (dd.kind === 'defer') {
          const close = closing(w.historyId, 'failed', r.finishedAt, `${DEFERRED_RUN_PREFIX}${d.reason}`, durationMs, formatTimestamp(dd.dueMs * 1000));
          this.pending.push(defer(step, state, dd.details, close));
        } else {
          this.pending.push(fail(step, state, dd.details, closing(w.historyId, 'failed', r.finishedAt, dd.reason, durationMs)));
          this.failedSeen = true;
          this.failedCount++;
          if (this.budgetSpent()) this.sayBudgetSpent(step.cloud);
        }
      } else if (d.kind === 'advance') {
        const close = closing(w.historyId, 'ok', r.finishedAt, d.details, durationMs);
        // A custom type has no endpoint nor prestage status to bring up to date.
        const completes = d.ended && this.opts.type !== 'custom' ? { endpoint: TYPES[this.opts.type].endpoint } : undefined;
        const startAttempt = d.ended ? undefined : NEXT_ATTEMPT;
        // The site's audit after its last state (audit-after.ts), which the subcloud row takes.
        const observed = r.result.kind === 'next' ? r.result.audit : undefined;
        this.pending.push(advance(step, state, d.to, d.details, close, startAttempt, completes, observed));
      } else {
        const close = closing(w.historyId, d.outcome, r.finishedAt, d.reason, durationMs);
        this.pending.push(fail(step, state, d.details, close, r.result.kind === 'failed' ? r.result.audit : undefined));
        this.failedSeen = true;
        // Counted when decided, so that starts queued in this very flush are held back (as
        // --stop-on-failure always did); the transition itself is committed with them.
        this.failedCount++;
        this.stageBudget?.stepFailed(step.cloud);
        if (this.budgetSpent()) this.sayBudgetSpent(step.cloud);
      }
    }
  }

  private sayBudgetSpent(cloud: string): void {
    if (this.budgetSaid) return;
    this.budgetSaid = true;
    if (this.budgetText === null) this.progress.note(`${cloud} failed: stop on failure, no new subcloud will start`);
    else this.progress.note(`${cloud} failed: ${this.failureLimit} step(s) failed (--max-failures ${this.budgetText}), no new subcloud will start`);
  }

  private newWorker(step: CursorStep, state: string, attempt: number, historyId: number): Worker {
    return { step, state, attempt, historyId, opId: this.nextOpId++, controller: null, abandoned: false, startedMs: Date.now() };
  }

  /** Start one state operation: the registry gets its entry before the driver is called. */
  private start(step: CursorStep, state: string, attempt: number, historyId: number): void {
    const existing = this.workers.get(step.id);
    if (existing) {
      throw new Error(`internal: ${step.cloud} already runs ${existing.state}; refusing a second worker for ${state}`);
    }
    const worker = this.newWorker(step, state, attempt, historyId);
    this.workers.set(step.id, worker);
    if (!this.driver.ownsTimeouts) this.deadlines.add(step.id, worker.opId, this.workers.size);
    let running: Promise<OperationResult>;
    try {
      const req = this.request(worker);
      this.resumed.delete(keyOf(step.id, state));
      running = this.driver.run(req);
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
      (r) => this.report(step.id, opId, r),
      (err: Error) => {
        // The file under the driver is full, corrupt or gone: that is not this subcloud's failure,
        // and the apply cannot go on.
        const fault = applyFaultError(err, this.opts.file ?? 'the database');
        if (fault) this.fail(fault);
        else this.report(step.id, opId, { kind: 'failed', reason: (err && err.message) || String(err) });
      },
    );
  }

  private request(worker: Worker): OperationRequest {
    const { step, state, attempt, historyId } = worker;
    const key = keyOf(step.id, state);
    const fields = (s: CursorStep) => this.subcloudFields(s);
    const labelled = this.labelled;
    return {
      cloud: step.cloud,
      type: this.opts.type,
      state,
      stateIndex: this.opts.states.indexOf(state),
      states: this.opts.states,
      attempt,
      resumed: this.resumed.has(key),
      failures: this.budgets.get(key)?.failures ?? 0,
      stage: step.stage,
      campaign: this.opts.campaign,
      fence: this.shared ? this.shared.fenceOf(this.fences.get(step.id) ?? 0) : this.opts.fenceToken,
      extra: this.opts.extra,
      options: this.config.optionsFor(step.subcloudId),
      // Read from the file only by a driver that asks (exec's placeholders; the sim, for its
      // sim_unreachable label, at a step's first state, only for a subcloud that has it), once per
      // subcloud in flight.
      get subcloud() {
        return fields(step).fields;
      },
      get labels() {
        return labelled && !labelled.has(step.subcloudId) ? NO_LABELS : fields(step).labels;
      },
      get signal() {
        if (!worker.controller) {
          worker.controller = new AbortController();
          if (worker.abandoned) worker.controller.abort();
        }
        return worker.controller.signal;
      },
      // Recorded by the next commit, in one transaction for all: until then the run's own pid
      // file beside its log tells a later apply where the run is.
      onStarted: (proc) => this.procs.add(historyId, proc),
      // Held with the run it came from (its history row; an adopted run's registry entry is made
      // later than this request): once that run has ended it is dropped, never written.
      onProgress: (text) => {
        const w = this.workers.get(step.id);
        if (!this.stopped && w && w.historyId === historyId) this.details.report(step.id, w.opId, text);
      },
    };
  }

  /**
   * The subclouds with a label the driver reads (its `labelKeys`), read as the apply starts and on
   * resume: any other subcloud's labels are none, without a read of its row at its first state.
   * Null: the driver may read any label (from the row, as its fields).
   */
  private labelled: Set<number> | null = null;
  private readLabelled(): void {
    const keys = this.driver.labelKeys;
    this.labelled = keys ? subcloudsLabelled(this.db, keys) : null;
  }

  /** A subcloud's fields, read once per subcloud in flight rather than once per state. */
  private readonly fields = new Map<number, { fields: Record<string, string | null>; labels: Labels }>();
  private subcloudFields(step: CursorStep): { fields: Record<string, string | null>; labels: Labels } {
    let f = this.fields.get(step.id);
    if (!f) {
      const row = subcloudById(this.db, step.subcloudId);
      // A step's subcloud cannot be deleted (subcloud delete refuses), so the row is there.
      f = row ? { fields: fieldTexts(row), labels: readLabels(row.labels) } : { fields: {}, labels: {} };
      this.fields.set(step.id, f);
    }
    return f;
  }

  /** Run the state again after the backoff; the subcloud keeps its slot meanwhile. */
  private retryLater(step: CursorStep, state: string, delayMs: number): void {
    const t = setLongTimeout(() => {
      this.retryTimers.delete(t);
      this.queue(startRun(step, state, state, NEXT_ATTEMPT));
    }, delayMs);
    this.retryTimers.add(t);
  }

  private abandon(w: Worker): void {
    w.abandoned = true;
    w.controller?.abort();
  }

  private release(stepId: number, ended: boolean): void {
    this.fields.delete(stepId);
    if (ended) {
      this.fences.delete(stepId);
      // A subcloud of this worker ended: a slot is free (of its share, of the window), so claims
      // refused as full may be asked again now rather than after CLAIM_RETRY_MS.
      if (this.mine.delete(stepId) && this.claimBlocked) this.unblockClaims();
    }
    // A retry budget is for one run of the subcloud through this entry of its states.
    for (const state of this.opts.states) this.budgets.delete(keyOf(stepId, state));
    const slot = this.slots.get(stepId);
    if (!slot) return;
    this.slots.delete(stepId);
    slot.release(ended);
  }

  // --- Requests from other shells (requests.ts finds them; they are carried out here) ---

  /** The abort's write: the strategy to `aborting`, every step not started `aborted`. */
  private abortWrite(): number {
    casStrategyState(this.db, ['abort requested'], 'aborting');
    return abortInitialSteps(this.db) + abortDeferredSteps(this.db);
  }

  /** The abort committed: start nothing new, let the rest run to its end. */
  private aborted(n: number): void {
    this.aborting = true;
    this.noNewSubclouds = true;
    // Deferred steps were aborted by the abort's write: none is tried again.
    this.deferrals?.clear();
    if (this.paused) this.setPaused(false, true);
    this.progress.initialAborted?.();
    this.progress.note(`abort requested: ${n} step(s) not started are aborted; ${this.slots.size} subcloud(s) in flight run to their end`);
    this.window?.pump();
    this.gates?.wake();
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
    if (!on) this.reloadWindows();
    this.window?.pump();
    this.gates?.wake();
  }

  /**
   * On resume, the groups' maintenance windows are read again (an operator who changed one while
   * the apply waited pauses and resumes to have it count), and the subclouds set aside are asked
   * again. Only then: the windows are not polled.
   */
  private reloadWindows(): void {
    try {
      this.maintenance = MaintenanceWait.load(this.db, this.opts.windowClock ?? Date.now, this.maintenance);
      this.readLabelled();
    } catch (err) {
      if (!this.committer.isBusy(err)) throw err;
      // A busy file keeps the windows read before.
    }
    this.window?.recheckAside();
  }

  /** A stage's window changed: the running stage follows at once, a later one when it starts. */
  private setWindow(stage: number, size: number): void {
    this.windows.set(stage, size);
    if (stage !== this.stage || !this.window) return;
    this.progress.windowChanged?.(stage, size);
    this.progress.note(`window of stage ${stage}: ${size} (${this.window.running} in flight)`);
    // First starts the larger window let in but not yet committed do not happen: their subclouds
    // go back to their place, until no more than `size` run (SPEC §4: a smaller window starts
    // none until fewer than N are in flight).
    let over = this.window.running - this.localWindow(size);
    if (over > 0) {
      this.pending = this.pending.filter((t) => {
        if (over <= 0 || t.close !== undefined) return true;
        const slot = this.slots.get(t.stepId);
        if (!slot || slot.started || resumedStep(slot.step)) return true;
        over--;
        this.release(t.stepId, false);
        return false;
      });
    }
    this.window.resize(this.localWindow(size));
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
    // Retries waiting out their backoff will not run in this process: their subclouds end here.
    for (const t of this.retryTimers) t.clear();
    this.retryTimers.clear();
    // Deferred steps stay deferred in the file: the next apply tries them when due.
    this.deferrals?.clear();
    for (const [id, slot] of [...this.slots]) if (slot.started && !this.workers.has(id) && !this.pending.some((p) => p.stepId === id)) this.release(id, true);
    this.drainTimer = setLongTimeout(() => {
      this.progress.warn(`gave up waiting after ${formatDuration(this.opts.drainMs ?? 60_000)}`);
      this.stopNow();
    }, this.opts.drainMs ?? 60_000);
    this.drainTimer.unref();
    this.window?.pump();
    this.gates?.wake();
    this.sharedWake?.();
  }

  /**
   * A write beside the orchestrator's own (the heartbeat) failed: a busy file is waited for and
   * said once; a full or corrupt one stops the apply as the orchestrator's own writes would.
   */
  writeFailed(err: Error): void {
    if (this.committer.isBusy(err)) return;
    if (faultOf(err)) this.fail(err);
  }

  /** Stop at once, from outside (the lock was lost): nothing more is written; run() throws `err`. */
  stopWith(err: Error): void {
    this.fail(err);
  }

  private stopNow(): void {
    for (const w of this.workers.values()) this.abandon(w);
    this.window?.pump();
    this.hardStop?.();
  }

  private fail(err: Error): void {
    if (this.fatal) return;
    // Stopping: what a heartbeat would take over now, nobody would run (workers.ts retire).
    this.shared?.retire();
    // A full, failing or corrupt file gets the SPEC's one-line message; anything else as it is.
    this.fatal = applyFaultError(err, this.opts.file ?? 'the database') ?? err;
    this.noNewSubclouds = true;
    this.noNewOperations = true;
    if (err instanceof LostLeaseError) this.letGo();
    else this.stopNow();
    this.gates?.wake();
    this.sharedWake?.();
  }

  /**
   * This worker was taken over (workers.ts): its runs another worker adopted on this host (their
   * history rows still `running`) are theirs now and go on; those closed as interrupted, to run
   * again elsewhere, are stopped. A read only: this worker writes nothing more.
   */
  private letGo(): void {
    let going: Set<number>;
    try {
      going = new Set(runsStillRunning(this.db, [...this.workers.values()].map((w) => w.historyId)));
    } catch {
      going = new Set();
    }
    this.leftGoing = going.size > 0;
    for (const w of this.workers.values()) if (!going.has(w.historyId)) this.abandon(w);
    this.window?.pump();
    this.hardStop?.();
  }

  /** Runs were left to the worker that took this one over: the driver must not stop them as it closes. */
  leftGoing = false;

  // --- Finishing ---

  private async finish(started: number): Promise<number> {
    this.deadlines.stop();
    return finishRun(this.db, (fn) => this.committer.write(fn), this.progress, {
      signal: this.interruptedBy,
      aborting: this.aborting,
      paused: this.paused,
      failedSeen: this.failedSeen,
      abandoned: [...this.workers.values()].map((w) => w.historyId),
      startedMs: started,
      firstStartedMs: this.firstStartedMs,
      peakInFlight: this.peak,
      maxWindow: this.maxWindow,
      who: this.opts.who,
      shared: this.shared !== null,
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

/** A commit found the strategy paused or aborted in the file before the poll did: rolled back. */
class StopInFile extends Error {
  constructor() {
    super('a stop in the file, not seen yet');
  }
}

/** A step caught mid-state by an earlier apply (not one `strategy retry` reset): resumed, not new. */
function resumedStep(step: CursorStep): boolean {
  return step.state !== 'initial' && step.state !== STEP_DEFERRED && !step.retried;
}
