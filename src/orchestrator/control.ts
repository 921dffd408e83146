/**
 * Control: the inputs of the one gate (domain/control.ts) and what switches them — the operator's
 * requests from other shells (abort, pause, resume, a window, a budget: requests.ts finds them,
 * they are carried out here), the failure budget, signals (a first Ctrl-C drains, a second stops
 * waiting), and a fatal stop (a store fault, a lost lock or lease).
 *
 * Owns: the stop flags (each only ever switches on, but `paused`), the failure count and budget,
 * the drain timer. Never touches: the registry's map (it abandons the workers it is handed), the
 * commit (abort's write goes through the committer it is handed), the slots.
 */
import { failureLimit, gate, type Gate } from '../domain/control.js';
import { formatDuration } from '../domain/durations.js';
import { applyFaultError } from '../store/faults.js';
import { casStrategyState } from '../store/strategy.js';
import type { Db } from '../store/open.js';
import { abortInitialSteps, abortStrandedSteps } from '../store/transitions.js';
import { abortDeferredSteps } from '../store/deferrals.js';
import { runsStillRunning } from '../store/runs.js';
import { lastEventOf } from '../store/events.js';
import { abortNowText, EVENTS } from '../domain/events.js';
import type { Timer } from '../platform/timers.js';
import { abandon, type Registry } from './registry.js';
import type { ProgressSink } from './progress.js';
import type { Runtime } from './runtime.js';
import type { Fleet } from './fleet.js';
import { LostLeaseError } from './workers.js';

/** What control acts on. */
export interface ControlHost {
  /** Subclouds holding a slot (in flight). */
  inFlight(): number;
  /** The window and the gates look again; a wait for other workers ends. */
  pump(): void;
  wake(): void;
  /** The stage's own budget is spent (the running stage is held). */
  stageHeld(): boolean;
  /** A signal: subclouds waiting for a retry or deferred, not running, end here. */
  drain(): void;
  /** Resumed: the maintenance windows are read again. */
  resumed(): void;
  /** Aborted: deferred steps are never tried again; the views are told. */
  aborted(): void;
  /** Abort now: the runs adopted that wait for their slot are stopped too, once they have it. */
  abandonAdopted(): void;
  /** Stop waiting: run() returns now. */
  hardStop(): void;
  /** file: the path, for the messages of store faults. */
  file: string;
  stopOnFailure: boolean;
  drainMs: number;
}

export class Control {
  private noNewSubclouds = false;
  private noNewOperations = false;
  paused = false;
  aborting = false;
  failedSeen = false;
  /** Steps failed so far, and the budget (SPEC §4): no new subcloud once it is reached. */
  failedCount = 0;
  totalSteps = 0;
  private budgetText: string | null = null;
  private failureLimit: number | null = null;
  private budgetSaid = false;
  interruptedBy: NodeJS.Signals | null = null;
  fatal: Error | null = null;
  /** Set once run() is done: a late answer or a queued flush must change nothing any more. */
  stopped = false;
  private drainTimer: Timer | null = null;
  /** Runs were left to the worker that took this one over: the driver must not stop them as it closes. */
  leftGoing = false;
  /** `strategy abort --now`: the words its stopped runs are recorded with (null: none came). */
  abortedNow: string | null = null;
  /** An abort now: the runs in flight are stopped, and no state starts after them. */
  private finishOnly = false;
  /** This apply takes up an abort an earlier one left: steps cut off mid-state are aborted, never run again. */
  private takingUp = false;

  constructor(
    private readonly rt: Runtime,
    private readonly registry: Registry,
    private readonly fleet: Fleet,
    private readonly progress: ProgressSink,
    private readonly host: ControlHost,
  ) {}

  /** The strategy's steps as the run starts: how many, and how many failed already. */
  counted(failed: number, total: number): void {
    this.failedCount = failed;
    this.totalSteps = total;
    this.failedSeen = failed > 0;
  }

  /** The one gate (domain/control.ts), asked before every start and at every commit. */
  gate(): Gate {
    return gate({
      paused: this.paused,
      noNewSubclouds: this.noNewSubclouds || this.fatal !== null,
      noNewOperations: this.noNewOperations || this.fatal !== null,
      failed: this.failedCount,
      limit: this.failureLimit,
      stageHeld: this.host.stageHeld(),
      noNextStates: this.finishOnly,
    });
  }

  /** Nothing more is decided here: run() is done, or a fatal error stopped it. */
  done(): boolean {
    return this.fatal !== null || this.stopped;
  }

  /** A signal or a fatal error: the run stops at the next look. */
  halted(): boolean {
    return this.interruptedBy !== null || this.fatal !== null;
  }

  /** An abort, a signal, a fatal error or the budget spent: no gate runs, no stage starts. */
  ending(): boolean {
    return this.noNewSubclouds || this.fatal !== null || this.interruptedBy !== null || this.budgetSpent();
  }

  budgetSpent(): boolean {
    return this.failureLimit !== null && this.failedCount >= this.failureLimit;
  }

  /**
   * A step failed. Counted when decided, so that starts queued in the same flush are held back
   * (as --stop-on-failure always did); the transition itself is committed with them.
   */
  stepFailed(cloud: string): void {
    this.failedSeen = true;
    this.failedCount++;
    if (this.budgetSpent()) this.sayBudgetSpent(cloud);
  }

  /** The strategy's failed steps as the store has them, every worker's: the budget counts them all. */
  failedElsewhere(failed: number): void {
    if (failed <= this.failedCount) return;
    this.failedCount = failed;
    this.failedSeen = true;
    if (this.budgetSpent()) this.sayBudgetSpent('a step of another worker');
    this.host.pump();
  }

  private sayBudgetSpent(cloud: string): void {
    if (this.budgetSaid) return;
    this.budgetSaid = true;
    if (this.budgetText === null) this.progress.note(`${cloud} failed: stop on failure, no new subcloud will start`);
    else this.progress.note(`${cloud} failed: ${this.failureLimit} step(s) failed (--max-failures ${this.budgetText}), no new subcloud will start`);
  }

  /** The failure budget, from the store (at start, or changed by `strategy update`). */
  setBudget(text: string | null, changed: boolean): void {
    this.budgetText = text;
    this.failureLimit = failureLimit(text, this.host.stopOnFailure, this.totalSteps);
    if (changed) this.progress.note(`failure budget: ${this.failureLimit === null ? 'none' : `${this.failureLimit} failed step(s)`} (${this.failedCount} failed so far)`);
    this.host.pump();
  }

  /**
   * The abort's write: the strategy to `aborting`, every step not started `aborted`; and when an
   * apply takes up an abort (`takeUpAbort`), every step left mid-state with no run going too.
   */
  async abortWrite(tx: Db): Promise<number> {
    await casStrategyState(tx, ['abort requested'], 'aborting');
    const stranded = this.takingUp ? await abortStrandedSteps(tx) : 0;
    return (await abortInitialSteps(tx)) + await abortDeferredSteps(tx) + stranded;
  }

  /** The abort committed: start nothing new, let the rest run to its end. */
  aborted(n: number): void {
    this.aborting = true;
    this.noNewSubclouds = true;
    this.host.aborted();
    if (this.paused) this.setPaused(false, true);
    this.progress.initialAborted?.();
    if (this.takingUp) this.progress.note(`finishing the abort: ${n} step(s) aborted; the runs left going are waited for (\`dcm strategy abort --now\` stops them)`);
    else this.progress.note(`abort requested: ${n} step(s) not started are aborted; ${this.host.inFlight()} subcloud(s) in flight run to their end`);
    this.host.pump();
    this.host.wake();
  }

  /**
   * This apply takes up an abort an earlier one left (`aborting` or `abort requested`): a step whose
   * run was cut off (a second Ctrl-C, a kill with its run) is aborted in that state and never run
   * again (issue 49: it ran again, as attempt 2); nothing starts that was not in flight. A run left
   * going is waited for, and its subcloud runs to its end as an abort lets those in flight (SPEC §6),
   * unless an abort now stops it.
   */
  async takeUpAbort(write: <T>(fn: (tx: Db) => Promise<T>) => Promise<T>, now: boolean): Promise<void> {
    this.takingUp = true;
    await this.abortSeen(write, now);
  }

  /**
   * An abort seen in the store: its write, once (`write`: a busy store throws, for the poll to ask
   * again); then, for `strategy abort --now`, the runs stopped with the words of its event.
   */
  async abortSeen(write: <T>(fn: (tx: Db) => Promise<T>) => Promise<T>, now: boolean): Promise<void> {
    if (!this.aborting) this.aborted(await write((tx) => this.abortWrite(tx)));
    if (!now || this.abortedNow !== null) return;
    const e = await lastEventOf(this.rt.db, [EVENTS.abortNow]);
    this.abortNow(abortNowText(e ?? { user: 'an operator', host: 'unknown', reason: null }));
  }

  /**
   * `strategy abort --now` (after the abort's own write): every run in flight is stopped as a
   * second Ctrl-C stops it (SIGTERM to all its processes, SIGKILL after its grace), and waited for;
   * its step is then `aborted` with `details`. Steps waiting for a retry or deferred end here too.
   */
  abortNow(details: string): void {
    if (this.abortedNow !== null || this.stopped) return;
    this.abortedNow = details;
    this.finishOnly = true;
    const running = this.registry.list();
    this.progress.warn(`abort now: stopping ${running.length} run(s) in flight (${details})`);
    for (const w of running) abandon(w);
    this.host.abandonAdopted();
    this.host.drain();
    this.host.pump();
    this.host.wake();
  }

  /** Pause (no new subcloud; in flight run on) or resume; `quiet`: said by the caller. */
  setPaused(on: boolean, quiet = false): void {
    if (this.paused === on) return;
    this.paused = on;
    this.progress.paused?.(on);
    if (!quiet) {
      if (on) {
        this.progress.note(
          `paused: no new subcloud starts; ${this.host.inFlight()} subcloud(s) in flight run to their end. ` +
            '`dcm strategy resume` goes on, `dcm strategy abort` ends it',
        );
      } else this.progress.note('resumed');
    }
    if (!on) this.host.resumed();
    this.host.pump();
    this.host.wake();
  }

  /** Another worker wrote the strategy's end: nothing more starts here, and this one ends too. */
  endedElsewhere(): void {
    this.noNewSubclouds = true;
    this.noNewOperations = true;
    this.host.pump();
    this.host.wake();
  }

  /** First Ctrl-C / SIGTERM: start nothing new, wait (bounded) for the operations in flight. */
  interrupt(signal: NodeJS.Signals): void {
    if (this.stopped) return;
    if (this.interruptedBy) {
      this.progress.warn(`${signal} again: not waiting for ${this.registry.size} operation(s) in flight`);
      this.stopNow();
      return;
    }
    this.interruptedBy = signal;
    this.noNewSubclouds = true;
    this.noNewOperations = true;
    // After an abort the strategy stays aborting (the file says so), and the next apply finishes it.
    const stays = this.aborting ? 'aborting' : this.paused ? 'paused' : 'applying';
    const then = this.aborting ? 'run `dcm strategy apply` to finish the abort, or `dcm strategy abort --now`' : 'run `dcm strategy apply` to resume';
    this.progress.warn(
      `${signal}: starting nothing new, waiting for ${this.registry.size} operation(s) in flight (again to stop waiting); ` +
        `the strategy stays ${stays}: ${then}`,
    );
    this.host.drain();
    this.drainTimer = this.rt.timers.after(() => {
      this.progress.warn(`gave up waiting after ${formatDuration(this.host.drainMs)}`);
      this.stopNow();
    }, this.host.drainMs);
    this.drainTimer.unref();
    this.host.pump();
    this.host.wake();
  }

  private stopNow(): void {
    for (const w of this.registry.list()) abandon(w);
    this.host.pump();
    this.host.hardStop();
  }

  /** Stop at once (a store fault, a lost lock or lease): nothing more is written; run() throws it. */
  async fail(err: Error): Promise<void> {
    if (this.fatal) return;
    // Stopping: what a heartbeat would take over now, nobody would run (workers.ts retire).
    this.fleet.retire();
    // A full, failing or corrupt store gets the SPEC's one-line message; anything else as it is.
    this.fatal = applyFaultError(err, this.host.file) ?? err;
    this.noNewSubclouds = true;
    this.noNewOperations = true;
    if (err instanceof LostLeaseError) await this.letGo();
    else this.stopNow();
    this.host.wake();
  }

  /**
   * This worker was taken over (workers.ts): its runs another worker adopted on this host (their
   * history rows still `running`) are theirs now and go on; those closed as interrupted, to run
   * again elsewhere, are stopped. A read only: this worker writes nothing more.
   */
  private async letGo(): Promise<void> {
    const workers = this.registry.list();
    let going: Set<number>;
    try {
      going = new Set(await runsStillRunning(this.rt.db, workers.map((w) => w.historyId)));
    } catch {
      going = new Set();
    }
    this.leftGoing = going.size > 0;
    for (const w of workers) if (!going.has(w.historyId)) abandon(w);
    this.host.pump();
    this.host.hardStop();
  }

  clear(): void {
    this.drainTimer?.clear();
    this.stopped = true;
  }
}
