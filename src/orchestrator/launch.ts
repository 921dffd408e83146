/**
 * Starting operations and taking their answers: a committed transition's operation gets its
 * registry entry before the driver is called (registry.ts), its deadline (deadlines.ts), and its
 * request (run-request.ts); whatever the driver answers becomes a report to the commit loop. Runs an
 * earlier orchestrator left going (adoption.ts) are held here until their subcloud has its slot,
 * then waited for, never started again. And what a run's retries are: how many each (step, state)
 * used, a backoff a resumed one must still wait out, which runs were cut off (DCM_RESUMED).
 *
 * Owns: the adopted runs waiting for their slot, the retry budgets, the cut-off set, the deadlines.
 * Never touches: the registry's map but through its add, the commit, the slots.
 */
import type { Actor } from '../platform/who.js';
import type { OperationRequest, OperationResult } from '../drivers/driver.js';
import type { ReportResult } from '../domain/control.js';
import type { ExtraArgs } from '../domain/options.js';
import type { ConfigBook } from '../domain/strategy-config.js';
import type { StrategyType } from '../domain/types.js';
import type { CursorStep } from '../store/cursor.js';
import { siteOutReason } from '../domain/transition.js';
import { parseTime } from '../store/clock.js';
import { applyFaultError } from '../store/faults.js';
import { cutOffBefore, interruptedLast, retryBudgets, type RetryBudget } from '../store/runs.js';
import { adoptLeftRuns, type Adopted } from './adoption.js';
import { waitRemote } from './remote-runs.js';
import { Deadlines } from './deadlines.js';
import type { Decided } from './decide.js';
import type { Fleet } from './fleet.js';
import { abandon, type Registry, type Worker } from './registry.js';
import type { RunProcess } from '../platform/proc.js';
import type { RunRequests } from './run-request.js';
import type { Runtime } from './runtime.js';
import type { RunObserver } from './observer.js';
import type { Transition } from '../domain/transition.js';
import { runIdOf } from '../drivers/exec/run-id.js';

const keyOf = (stepId: number, state: string) => `${stepId}\u0000${state}`;

export interface LaunchHost {
  report(stepId: number, opId: number, result: ReportResult): void;
  fail(err: Error): void;
  /** A run began at its site (its process, null: none to record), or its progress line: for the next commit. */
  started(historyId: number, proc: RunProcess | null): void;
  progress(stepId: number, opId: number, text: string): void;
  /** The orchestrator has stopped: late progress lines are dropped. */
  stopped(): boolean;
  /** A slot of this worker's, already started (not adopted twice). */
  startedSlot(stepId: number): boolean;
  config(): ConfigBook;
}

export interface LaunchOptions {
  type: StrategyType;
  states: readonly string[];
  campaign: string;
  extra: ExtraArgs;
  stateTimeoutMs: number;
  fenceToken?: string;
  file: string;
  /** Who runs it, as the event record names them: a run held as of unknown outcome is recorded. */
  who?: Actor;
  observer?: RunObserver;
}

export class Launcher {
  /** (step, state) whose last run was cut off: its next run is told so (DCM_RESUMED). */
  private resumed = new Set<string>();
  /** Retries used by each (step, state) in flight, and a backoff a resumed one must still wait out (from the history). */
  private budgets = new Map<string, RetryBudget>();
  /** Runs an earlier orchestrator left going, with the worker made for each: waited for once their subcloud has its slot. */
  private readonly adopted = new Map<number, { run: Adopted | null; worker: Worker }>();
  readonly deadlines: Deadlines;
  /** Runs of another host's being waited for (remote-runs.ts): each one's stop. */
  private readonly remoteWaits = new Set<() => void>();

  constructor(
    private readonly rt: Runtime,
    private readonly registry: Registry,
    private readonly fleet: Fleet,
    private readonly runs: RunRequests,
    private readonly host: LaunchHost,
    private readonly opts: LaunchOptions,
  ) {
    this.deadlines = new Deadlines(
      opts.stateTimeoutMs,
      (stepId, opId) => registry.current(stepId, opId),
      (stepId, opId) => {
        abandon(registry.get(stepId)!);
        host.report(stepId, opId, { kind: 'timeout' });
      },
      rt,
    );
  }

  /** The history as a run starts: retries used, backoffs due. */
  async loadBudgets(): Promise<void> {
    this.budgets = await retryBudgets(this.rt.db);
  }

  /** The history once left runs are closed: the runs cut off, whose next runs are told so. */
  async loadResumed(): Promise<void> {
    this.resumed = await interruptedLast(this.rt.db);
  }

  /** More runs were closed as interrupted (a takeover): their next runs are told so. */
  async resumedAgain(): Promise<void> {
    for (const key of (await interruptedLast(this.rt.db))) this.resumed.add(key);
  }

  /** What a decided report counts toward: a run cut off, a retry used. */
  decided(d: Decided, w: Worker): void {
    const key = keyOf(w.step.id, w.state);
    if (d.resumed) this.resumed.add(key);
    if (d.retryUsed) {
      const b = this.budgets.get(key) ?? { failures: 0, dueMs: null };
      b.failures++;
      this.budgets.set(key, b);
    }
  }

  /**
   * When a retry of (step, state) is due after its backoff (null: now); a run cut off goes now. Never
   * later than its backoff from now: a due time further ahead was written by a clock ahead of this
   * one (another host's, or this one's before it stepped back), as deferrals.ts's next tries.
   */
  retryDue(step: CursorStep, state: string): number | null {
    const key = keyOf(step.id, state);
    const b = this.budgets.get(key);
    if (this.resumed.has(key) || !b || b.dueMs === null) return null;
    return b.backoffMs === undefined ? b.dueMs : Math.min(b.dueMs, this.rt.clock.wall() + b.backoffMs);
  }

  /** A retry budget is for one run of the subcloud through this entry of its states. */
  forget(stepId: number): void {
    this.runs.forget(stepId);
    for (const state of this.opts.states) this.budgets.delete(keyOf(stepId, state));
  }

  /**
   * Runs an earlier orchestrator left going, each with the worker made for it once, here: the
   * request the driver keeps (its abort signal above all) is that worker's, so a second Ctrl-C or
   * a fatal stop reaches the run through it. One of several workers adopts only the runs of the
   * steps it holds (workers.ts gave it those of a worker gone from its host), and not twice.
   */
  async adoptLeft(): ReturnType<typeof adoptLeftRuns> {
    // A slot not started yet waits for its first claim here: that subcloud is adopted all the same.
    const skip = (id: number) => this.adopted.has(id) || this.host.startedSlot(id);
    // The workers made for the runs the driver is asked about (not registered: not running here yet).
    const made: Worker[] = [];
    const left = await adoptLeftRuns(
      this.rt.db,
      this.rt.driver,
      (step, l) => {
        const worker = this.registry.make(step, l.state, l.attempt, l.historyId);
        made.push(worker);
        return this.request(worker);
      },
      this.fleet.adoptScope(skip),
      (l, req, here) => {
        const remote = this.rt.driver.remote?.(l, req);
        return remote ? waitRemote(this.rt, l, remote, here, this.remoteWaits, this.opts.who) : null;
      },
    );
    const byStep = new Map(made.map((w) => [w.step.id, w]));
    for (const [id, run] of left.adopted) this.adopted.set(id, { run, worker: byStep.get(id)! });
    // One of several workers: the next runs of a subcloud adopted carry the fence its takeover gave it.
    if (this.fleet.shared) await this.fleet.adopted(this.rt.db, [...left.adopted.keys()]);
    for (const id of left.adopted.keys()) this.observed(byStep.get(id)!, this.rt.clock.wall(), true);
    if (left.adopted.size || left.interrupted.length) this.opts.observer?.event('runs adopted', { adopted: left.adopted.size, interrupted: left.interrupted.length });
    return left;
  }

  /** The orchestrator ends: no more looks for runs of other hosts (they are the next apply's). */
  stop(): void {
    this.deadlines.stop();
    for (const stop of [...this.remoteWaits]) stop();
  }

  /** Abort now: the runs adopted that wait for their slot are stopped as soon as they are waited for. */
  abandonAdopted(): void {
    for (const a of this.adopted.values()) abandon(a.worker);
  }

  /** How many runs adopted wait for their subcloud's slot. */
  adoptedWaiting(): number {
    return this.adopted.size;
  }

  /** The subcloud got its slot: a run left going for it is waited for, never started again. */
  takeAdopted(step: CursorStep): boolean {
    const a = this.adopted.get(step.id);
    if (!a) return false;
    this.adopted.delete(step.id);
    this.fleet.hold(step.id);
    // Timed from its own start, not from its adoption (issue 49): its history row says when.
    a.worker.startedMs = Math.min(this.rt.clock.wall(), parseTime(a.run!.left.startedAt));
    this.registry.add(a.worker);
    this.awaitResult(a.worker, a.run!.result);
    return true;
  }

  /**
   * Start one state operation: the registry gets its entry before the driver is called. A subcloud
   * taken out of the rollout (`out`: unmanaged, offline, read in the commit that opened the run)
   * is not called at all: its run fails at once, saying why (issue 49).
   */
  start(step: CursorStep, state: string, attempt: number, historyId: number, out?: string): void {
    const worker = this.registry.make(step, state, attempt, historyId);
    this.registry.add(worker);
    if (out) {
      this.awaitResult(worker, Promise.resolve({ kind: 'failed', reason: siteOutReason(step.cloud, out) }));
      return;
    }
    if (!this.rt.driver.ownsTimeouts) this.deadlines.add(step.id, worker.opId, this.registry.size);
    const known = this.resumed.has(keyOf(step.id, state));
    this.resumed.delete(keyOf(step.id, state));
    // One of several workers: a takeover by this one may have closed the run before as cut off
    // after the window read this step and before the takeover's runs were read again
    // (takeover.ts readAgain): the history, not that read, says whether it is resumed.
    const resumed = known || attempt === 1 || !this.fleet.shared ? Promise.resolve(known) : cutOffBefore(this.rt.db, step.id, state, attempt);
    // A driver that throws instead of rejecting fails this operation, not the whole apply.
    const running = resumed.then((r) => this.request(worker, r)).then((req) => this.rt.driver.run(req));
    this.awaitResult(worker, running);
    this.observed(worker, this.rt.clock.wall(), false);
  }

  /** A committed transition closed its run: the observer (the traces) is told. */
  closed(t: Transition): void {
    const c = t.close;
    if (c) this.opts.observer?.runEnded({ historyId: c.historyId, outcome: c.outcome, reason: c.details, atMs: this.rt.clock.wall() });
  }

  /** The observer (the traces) is told of a run started or adopted here. */
  private observed(w: Worker, atMs: number, adopted: boolean): void {
    const o = this.opts.observer;
    if (!o) return;
    const { step, state, attempt, historyId } = w;
    o.runStarted({
      historyId,
      cloud: step.cloud,
      state,
      attempt,
      stage: step.stage,
      runId: runIdOf({ campaign: this.opts.campaign, cloud: step.cloud, state, attempt }),
      fence: this.fleet.fenceOf(step.id, this.opts.fenceToken),
      atMs,
      adopted,
    });
  }

  /** The driver's answer, whatever it is, becomes a report for this worker. */
  private awaitResult(worker: Worker, result: Promise<OperationResult>): void {
    const { step, opId } = worker;
    result.then(
      (r) => this.host.report(step.id, opId, r),
      (err: Error) => {
        // The store under the driver is full, corrupt or gone: that is not this subcloud's
        // failure, and the apply cannot go on.
        const fault = applyFaultError(err, this.opts.file);
        if (fault) this.host.fail(fault);
        else this.host.report(step.id, opId, { kind: 'failed', reason: (err && err.message) || String(err) });
      },
    );
  }

  private request(worker: Worker, resumed = this.resumed.has(keyOf(worker.step.id, worker.state))): Promise<OperationRequest> {
    const { step, state, historyId } = worker;
    const key = keyOf(step.id, state);
    return this.runs.request(worker, {
      type: this.opts.type,
      states: this.opts.states,
      campaign: this.opts.campaign,
      extra: this.opts.extra,
      config: this.host.config(),
      resumed,
      failures: this.budgets.get(key)?.failures ?? 0,
      fence: this.fleet.fenceOf(step.id, this.opts.fenceToken),
      onStarted: (proc) => this.host.started(historyId, proc),
      // Held with the run it came from (its history row; an adopted run's registry entry is made
      // later than this request): once that run has ended it is dropped, never written.
      onProgress: (text) => {
        const w = this.registry.get(step.id);
        if (!this.host.stopped() && w && w.historyId === historyId) this.host.progress(step.id, w.opId, text);
      },
    });
  }
}

/** What an apply says of the runs an earlier one left, as it starts. */
export function resumingNotes(adopted: number, interrupted: number): string[] {
  const out: string[] = [];
  if (adopted) out.push(`resuming: ${adopted} run(s) left by the last apply are still going or ended meanwhile; they are not run again`);
  if (interrupted) out.push(`resuming: ${interrupted} operation(s) were interrupted and will run again`);
  return out;
}
