/**
 * The stages: each stage's window of slots (window.ts, p-limit fed from the store a page at a
 * time), the gate between stages (stage-gate.ts), the maintenance windows a subcloud waits for,
 * deferred steps waiting for their next try, and retries waiting out their backoff. A subcloud
 * holds its slot from its first state to its end; stage N+1 starts when every subcloud of stage N
 * has ended and stage N's gate has let it.
 *
 * Owns: the slots, the running stage and its window, every stage's window size, the stage gates,
 * the retry and deferral timers. Never touches: the registry's map (a subcloud's operations are
 * started through its host), the commit (transitions are queued through its host).
 */
import { STEP_DEFERRED } from '../domain/deferral.js';
import type { Gate } from '../domain/control.js';
import { NEXT_ATTEMPT, startRun, type Transition } from '../domain/transition.js';
import type { ExtraArgs } from '../domain/options.js';
import type { Actor } from '../platform/who.js';
import type { Timer } from '../platform/timers.js';
import { openStages, StageCursor, type CursorStep } from '../store/cursor.js';
import type { Refusal, ShareOf } from '../store/workers.js';
import { strategyState } from '../store/strategy.js';
import type { Db } from '../store/open.js';
import { Deferrals } from './deferrals.js';
import type { Fleet } from './fleet.js';
import { MaintenanceWait } from './maintenance-wait.js';
import { recordEvent } from '../store/events.js';
import { EVENTS } from '../domain/events.js';
import type { ProgressSink } from './progress.js';
import type { Runtime } from './runtime.js';
import { StageGates, type StageBudget } from './stage-gate.js';
import { StageWindow } from './window.js';
import { resumedStep } from './pacer.js';

/** A subcloud holding a slot of its stage's window, from its first state to its end. */
interface Slot {
  step: CursorStep;
  /** True: it ended; false: it was held back before its first state started. */
  release: (ended: boolean) => void;
  /** Its first operation was committed: from then on it is in flight and runs to its end. */
  started: boolean;
}

/** What the stages ask of the rest of the orchestrator. */
export interface StagesHost {
  gate(): Gate;
  /** An abort, a signal, a fatal error or the budget spent: no gate runs, no stage starts. */
  ending(): boolean;
  /** A signal or a fatal error: the run stops here. */
  stopped(): boolean;
  queue(t: Transition): void;
  /** The runs left going by an earlier orchestrator or a worker taken over (launch.ts). */
  adopted(): {
    /** Adopted now that its subcloud has a slot: true if there was one. */
    takeAdopted(step: CursorStep): boolean;
    /** How many still wait for their slot. */
    adoptedWaiting(): number;
  };
  /** When a retry of (step, state) is due after its backoff (null: now), unless its last run was cut off. */
  retryDue(step: CursorStep, state: string): number | null;
  /** The subcloud let go of its slot: its retry budgets and fields are forgotten. */
  forget(stepId: number): void;
  /** The strategy's pause as the store says, followed; and a gate's own pause. */
  syncPaused(): Promise<boolean>;
  pauseByGate(reason: string): void;
  write<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  fail(err: Error): void;
  who?: Actor;
  type: string;
  states: readonly string[];
  extra: ExtraArgs;
  pollMs: number;
  windowClock: () => number;
  /** The start rate of `stage` (orchestrator/pacer.ts): null when a first start may be asked for now, else the wait. */
  pace(stage: number): number | null;
}

export class Stages {
  private readonly slots = new Map<number, Slot>();
  /** The stage running now, its window, and every stage's window as the store says. */
  stage: number | null = null;
  window: StageWindow | null = null;
  windows = new Map<number, number>();
  private cursor: StageCursor | null = null;
  gates: StageGates | null = null;
  stageBudget: StageBudget | null = null;
  /** Retries waiting out their backoff: the subcloud keeps its slot meanwhile. */
  private readonly retryTimers = new Set<Timer>();
  deferrals: Deferrals | null = null;
  /** The groups' maintenance windows (null: no group has one). */
  private maintenance: MaintenanceWait | null = null;
  /** Wakes a worker waiting for the others (a stage's end, the strategy's end). */
  private othersWake: (() => void) | null = null;
  peak = 0;
  /** The largest window of a stage in which a subcloud started (for the summary). */
  maxWindow = 0;

  constructor(
    private readonly rt: Runtime,
    private readonly fleet: Fleet,
    private readonly progress: ProgressSink,
    private readonly host: StagesHost,
  ) {}

  /** What the run starts from: deferred steps, maintenance windows. */
  async load(firstStartedMs: number): Promise<void> {
    this.deferrals = new Deferrals(
      this.rt.db,
      this.host.extra,
      firstStartedMs,
      (step) => {
        if (step.stage === this.stage) this.window?.add(step);
      },
      this.rt,
    );
    this.maintenance = await MaintenanceWait.load(this.rt.db, this.host.windowClock);
  }

  get inFlight(): number {
    return this.slots.size - (this.window?.lent ?? 0);
  }

  hasSlot(stepId: number): boolean {
    return this.slots.has(stepId);
  }

  startedSlot(stepId: number): boolean {
    return this.slots.get(stepId)?.started === true;
  }

  slot(stepId: number): Slot {
    return this.slots.get(stepId)!;
  }

  /** The stages to their end; one of several workers goes round again for steps a worker gone let go of. */
  async runAll(): Promise<void> {
    // Runs adopted that a pass while stopping was run for (below): not again for the same ones.
    let passedFor = 0;
    for (;;) {
      await this.runStages();
      if (!this.fleet.shared) return;
      while (!this.host.stopped() && await this.fleet.inFlightElsewhere(this.rt.db) > 0) await this.waitForOthers();
      if (this.host.stopped() || (await openStages(this.rt.db)).length === 0) return;
      // Stopping (an abort) starts nothing new; but the runs a takeover adopted meanwhile, while
      // this worker waited for the others, are on their sites: one more pass takes them and waits
      // for their ends, or the abort would end with them going (sim seed 3602656528).
      if (this.host.gate().stopping) {
        const waiting = this.host.adopted().adoptedWaiting();
        if (waiting === 0 || waiting === passedFor) return;
        passedFor = waiting;
      }
    }
  }

  private async runStages(): Promise<void> {
    const gates = (this.gates = this.stageGates());
    // Every stage from the first open one: a stage that ended while its gate was not passed yet
    // (killed in a soak, at a pause) still has its gate to go through.
    const open = await openStages(this.rt.db);
    const stages = await gates.stagesFrom(open);
    for (const [i, stage] of stages.entries()) {
      for (let again = open.includes(stage); ; again = true) {
        if (again) await this.runStage(stage, gates);
        if (this.host.stopped()) return;
        let next;
        try {
          next = await gates.after(stage, stages[i + 1] ?? null);
        } catch (err) {
          // A gate's write refused by the fence, a store fault: as any of the orchestrator's writes.
          this.host.fail(err as Error);
          return;
        }
        if (next !== 'again') break;
      }
    }
  }

  private async runStage(stage: number, gates: StageGates): Promise<void> {
    const size = this.windows.get(stage) ?? 1;
    this.stage = stage;
    this.stageBudget = await gates.budget(stage);
    this.progress.stageStarted?.(stage, size);
    for (;;) {
      await this.runStagePass(stage, size);
      // One of several workers: the stage ends when every worker's subclouds of it have ended.
      // Those another worker let go of (it was taken over) are this pass's to find.
      if (!this.fleet.shared || this.host.stopped() || this.host.gate().stopping) break;
      if (await this.fleet.openInStage(this.rt.db, stage) === 0) break;
      await this.waitForOthers();
    }
    this.window = null;
    this.cursor = null;
    this.stageBudget = null;
    // Ended with steps still deferred only when nothing new may start: they stay so in the store.
    this.deferrals?.clear();
  }

  /** One pass of a window over the stage's open steps (the only one, but for one of several workers). */
  private async runStagePass(stage: number, size: number): Promise<void> {
    const cursor = (this.cursor = new StageCursor(this.rt.db, stage, this.fleet.ownerId));
    this.window = new StageWindow(
      this.fleet.localWindow(this.windows.get(stage) ?? size),
      {
        fetch: (limit) => cursor.next(limit),
        blocked: () => this.fleet.blocked,
        gate: () => this.host.gate(),
        run: (step) => this.runSubcloud(step),
        failed: (err) => this.host.fail(err),
        deferred: () => this.deferrals?.waiting ?? 0,
        pace: () => this.host.pace(stage),
        hold: (step) =>
          this.maintenance?.decide(
            step.subcloudId,
            (line, opened) => this.windowSaid(line, opened),
            (group, text) => this.progress.windowWait?.(group, text),
          ) ?? null,
      },
      this.rt,
    );
    await this.window.run();
  }

  /**
   * A group began waiting for its maintenance window, or its window opened: said in the progress,
   * and kept in the event record (its own commit), so that the report shows the wait afterwards.
   */
  private windowSaid(line: string, opened: boolean): void {
    this.progress.note(line);
    const who = this.host.who;
    if (!who) return;
    const event = opened ? EVENTS.maintenanceOpen : EVENTS.maintenanceWait;
    this.host.write((tx) => recordEvent(tx, who, event, line)).catch((err: Error) => this.host.fail(err));
  }

  /** Sites whose deferral this process has recorded as an event: the first of each is told (issue 49). */
  private readonly deferralsSaid = new Set<number>();

  /**
   * A deferral committed: the step waits for its next try; its first in this process is recorded
   * (its own commit), so that on_event hears that a site did not answer.
   */
  deferred(step: CursorStep, details: string): void {
    this.deferrals!.committed(step);
    const who = this.host.who;
    if (!who || this.deferralsSaid.has(step.id)) return;
    this.deferralsSaid.add(step.id);
    this.host.write((tx) => recordEvent(tx, who, EVENTS.deferred, `${step.cloud}: ${details}`)).catch((err: Error) => this.host.fail(err));
  }

  /** Resolves true when the subcloud has ended, false when it was held back before it started. */
  private runSubcloud(step: CursorStep): Promise<boolean> {
    // A subcloud runs here once at a time (the window holds a step once, window.ts).
    if (this.slots.has(step.id)) return Promise.resolve(true);
    return new Promise<boolean>((release, reject) => {
      const slot: Slot = { step, release, started: false };
      this.slots.set(step.id, slot);
      // A slot lent by a subcloud ending in the same commit counts once (window.ts lend).
      this.peak = Math.max(this.peak, this.slots.size - (this.window?.lent ?? 0));
      this.maxWindow = Math.max(this.maxWindow, this.window?.window ?? 0);
      // Still going (or ended while no dcm ran): wait for it, never start it again.
      slot.started = this.host.adopted().takeAdopted(step);
      if (slot.started) return;
      if (step.state === STEP_DEFERRED) {
        // Deferred by this process or an earlier one: tried again once due, from the store's record.
        this.deferrals!.resumeOf(step).then((d) => {
        if (d && 'state' in d) this.host.queue(startRun(step, STEP_DEFERRED, d.state, NEXT_ATTEMPT));
        else this.release(step.id, true);
        }, reject);
        return;
      }
      const first = step.state === 'initial' ? this.host.states[0] : step.state;
      // Killed while a retry waited out its backoff: the backoff goes on from the history.
      const due = this.host.retryDue(step, first);
      if (due !== null && due > this.rt.clock.wall()) {
        slot.started = true;
        this.retryLater(step, first, due - this.rt.clock.wall());
        return;
      }
      this.host.queue(startRun(step, step.state, first, NEXT_ATTEMPT));
    });
  }

  /** Run the state again after the backoff; the subcloud keeps its slot meanwhile. */
  retryLater(step: CursorStep, state: string, delayMs: number): void {
    const t = this.rt.timers.after(() => {
      this.retryTimers.delete(t);
      this.host.queue(startRun(step, state, state, NEXT_ATTEMPT));
    }, delayMs);
    this.retryTimers.add(t);
  }

  /** The subcloud gives its slot back: `ended`, or held back before its first state started. */
  release(stepId: number, ended: boolean): void {
    if (ended) this.fleet.ended(stepId);
    this.host.forget(stepId);
    const slot = this.slots.get(stepId);
    if (!slot) return;
    this.slots.delete(stepId);
    slot.release(ended);
  }

  /** Subclouds that end in the commit being made lend their slots to the next (window.ts lend): how many did. */
  lend(stepIds: readonly number[]): number {
    return this.window?.lend(stepIds.filter((id) => this.slots.get(id)?.step.stage === this.stage)) ?? 0;
  }

  /** A claim refused: `taken`, another worker's subcloud (ended, for this pass); `full` and `rate` wait in their place. */
  refused(stepId: number, why: Refusal): void {
    if (why === 'full') {
      // The window was full across the workers: this worker's own follows the share the claim
      // judged it by (workers joined since its last look at the fleet, a heartbeat ago), so that it
      // asks for no more than it is let have, rather than be refused every little while.
      if (this.fleet.claimedAmong) this.followShare(this.fleet.claimedAmong);
      this.fleet.block(() => this.pump());
    }
    this.release(stepId, why === 'taken');
  }

  /** A signal: nothing more starts here; subclouds waiting for a retry, not running, end now. */
  interrupted(running: (stepId: number) => boolean): void {
    for (const t of this.retryTimers) t.clear();
    this.retryTimers.clear();
    // Deferred steps stay deferred in the store: the next apply tries them when due.
    this.deferrals?.clear();
    for (const [id, slot] of [...this.slots]) if (slot.started && !running(id)) this.release(id, true);
  }

  /** A stage's window changed: the running stage follows at once, a later one when it starts. */
  setWindow(stage: number, size: number, pending: { filter(keep: (t: Transition) => boolean): void }): void {
    this.windows.set(stage, size);
    if (stage !== this.stage || !this.window) return;
    this.progress.windowChanged?.(stage, size);
    this.progress.note(`window of stage ${stage}: ${size} (${this.window.running} in flight)`);
    // First starts the larger window let in but not yet committed do not happen: their subclouds
    // go back to their place, until no more than `size` run (SPEC §4: a smaller window starts
    // none until fewer than N are in flight).
    let over = this.window.running - this.fleet.localWindow(size);
    if (over > 0) {
      pending.filter((t) => {
        if (over <= 0 || t.close !== undefined) return true;
        const slot = this.slots.get(t.stepId);
        if (!slot || slot.started || resumedStep(slot.step)) return true;
        over--;
        this.release(t.stepId, false);
        return false;
      });
    }
    this.window.resize(this.fleet.localWindow(size));
  }

  /** The live workers changed: the window this worker fills follows its share. */
  followShare(workers: readonly ShareOf[]): void {
    if (!this.fleet.followShare(workers)) return;
    if (this.stage !== null && this.window) this.window.resize(this.fleet.localWindow(this.windows.get(this.stage) ?? 1));
    // Each worker reads its own part of a stage first (store/cursor.ts), by how many workers there
    // are: when that changes, what was read ahead (the whole stage, for the first one alone) is
    // read again, or this worker asks for steps the others now read as theirs, refused as taken
    // (issue 51: 466 refusals of one worker in the latency-bound run).
    if (workers.length === this.parts) return;
    this.parts = workers.length;
    this.rescan();
  }

  /** How many workers the stage's parts were last read among (0: not yet known). */
  private parts = 0;

  /**
   * On resume, the groups' maintenance windows are read again (an operator who changed one while
   * the apply waited pauses and resumes to have it count), and the subclouds set aside are asked
   * again. Only then: the windows are not polled. `busy`: a busy store keeps the windows read before.
   */
  async reloadWindows(busy: (err: unknown) => boolean, alsoRead: () => Promise<void>): Promise<void> {
    try {
      this.maintenance = await MaintenanceWait.load(this.rt.db, this.host.windowClock, this.maintenance);
      await alsoRead();
    } catch (err) {
      if (!busy(err)) throw err;
    }
    this.window?.recheckAside();
  }

  /** Read the running stage again (another worker let steps go), and wake a wait for the others. */
  rescan(): void {
    this.cursor?.rewind();
    this.window?.rescan();
    this.wake();
  }

  /** Something a wait may be for happened: the window looks again, gates and the wait for others too. */
  pump(): void {
    this.window?.pump();
  }

  wake(): void {
    this.othersWake?.();
  }

  /** A subcloud of another worker let go of, or taken over to run here: the running stage takes it. */
  add(step: CursorStep): void {
    if (step.stage === this.stage) this.window?.add(step);
  }

  /** Wait a poll's length, or until woken (a takeover, a stop). */
  private waitForOthers(): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = this.rt.timers.after(done, this.host.pollMs);
      const self = this;
      function done(): void {
        t.clear();
        if (self.othersWake === done) self.othersWake = null;
        resolve();
      }
      this.othersWake = done;
    });
  }

  /** The gate runner's view of this orchestrator (stage-gate.ts never sees the registry). */
  private stageGates(): StageGates {
    const db = this.rt.db;
    const leads = this.fleet.leads;
    return new StageGates(
      db,
      {
        syncPaused: () => this.host.syncPaused(),
        ending: () => this.host.ending(),
        write: (fn) => this.host.write(fn),
        pause: (reason) => this.host.pauseByGate(reason),
        note: (text) => this.progress.note(text),
        type: this.host.type,
        who: this.host.who,
        leads: leads ? () => leads(db) : undefined,
      },
      this.rt,
    );
  }

  /** Nothing more runs in this process: no timer is left. */
  stop(): void {
    this.gates?.stop();
    for (const t of this.retryTimers) t.clear();
    this.retryTimers.clear();
    this.deferrals?.clear();
  }
}

/** The store's pause, as a gate's host reads it. */
export async function pausedInStore(rt: Runtime): Promise<boolean> {
  return (await strategyState(rt.db)) === 'paused';
}
