/**
 * The orchestrator as one of several workers on a strategy (a PostgreSQL store, README "Several
 * hosts"): the claims a commit asks for and what it was granted, the fence each claimed step's
 * runs carry, this worker's share of the window, and the wait for the other workers. The lease
 * itself (heartbeat, takeover) is workers.ts's. On a file there is one orchestrator: `LONE_FLEET`
 * is the null object, which claims nothing, shares nothing and waits for nobody.
 *
 * Owns: the claims and fences of this worker's steps, its share, the claim back-off. Never
 * touches: the registry, the slots, the commit (it only answers inside the commit's fence).
 */
import type { ProcessRuntime } from '../platform/runtime.js';
import type { Db } from '../store/open.js';
import { leavesFlight, type Transition } from '../domain/transition.js';
import type { CursorStep } from '../store/cursor.js';
import { claimSteps, inFlightElsewhere, leadWorker, shareOfWindow, stageElsewhere, stepFences, type ClaimAsk, type Refusal, type ShareOf } from '../store/workers.js';
import { liveWorkers, type WorkerLease } from './workers.js';
import type { Timer } from '../platform/timers.js';

/**
 * How soon a worker whose claims found the stage's window full (across workers) asks again, if no
 * subcloud of its own ends first: another worker over its share (it took the window before this
 * one joined) gives it back as its subclouds end, and an ask costs this worker's commit alone
 * (workers' batches run side by side: issue 51), not a turn of every worker's.
 */
const CLAIM_RETRY_MS = 50;

export interface Fleet {
  /** One of several workers (false: the one orchestrator of a file). */
  readonly shared: boolean;
  /** One of several workers: its lease (ms), past which it is taken over; null on a file. */
  readonly leaseMs: number | null;
  /** This worker's id, which its claimed steps name (undefined on a file). */
  readonly ownerId: number | undefined;
  /** The commit about to be made: the subclouds whose first operation here it opens are claimed in it. */
  asking(batch: readonly Transition[], slotStep: (stepId: number) => CursorStep): boolean;
  /**
   * Inside the commit's fence: the claims asked for, of the first starts `firstLimit.ids` at most
   * `max` (the start rate); the steps refused are left out of the commit.
   */
  claim(db: Db, firstLimit?: { ids: ReadonlySet<number>; max: number }): Promise<ReadonlySet<number> | undefined>;
  /** The commit is over (made or not): what it was granted is this worker's; the refused, to let go of. */
  settle(committed: boolean): Map<number, Refusal>;
  /** The adoption of left runs, limited to this worker's steps. */
  adoptScope(skip: (id: number) => boolean): { owner: number; skip: (id: number) => boolean; host: string } | undefined;
  /** Runs adopted: their next runs carry the fence their takeover gave them. */
  adopted(db: Db, ids: readonly number[]): Promise<void>;
  /** A step this worker holds (an adopted run's): its next operations need no claim. */
  hold(stepId: number): void;
  /** The DCM_FENCE of a step's run (`fileToken`: the apply lock's, on a file). */
  fenceOf(stepId: number, fileToken: string | undefined): string | undefined;
  /** A subcloud ended here: its fence goes, and a claim refused as full may be asked again now. */
  ended(stepId: number): void;
  /** The stage's window is full across the workers: no subcloud takes a slot until this clears. */
  readonly blocked: boolean;
  /** A claim refused as full: wait a little before asking again. */
  block(pump: () => void): void;
  /** The workers the last claim judged its share among (undefined: none read yet). */
  readonly claimedAmong: readonly ShareOf[] | undefined;
  /** The window this worker fills of a stage's `size`. */
  localWindow(size: number): number;
  /** The live workers and their caps as a heartbeat read them: true when this worker's share changed. */
  followShare(workers: readonly ShareOf[]): boolean;
  /** Subclouds other workers have in flight (the strategy's end waits for them). */
  inFlightElsewhere(db: Db): Promise<number>;
  /** Steps of `stage` still open on any worker. */
  openInStage(db: Db, stage: number): Promise<number>;
  /** Whether this worker runs the stage gates (the lead), or undefined: the one orchestrator does. */
  readonly leads: ((db: Db) => Promise<boolean>) | undefined;
  /** Stops taking others over (the orchestrator has stopped). */
  retire(): void;
  /** The live workers (for the fleet's view); empty on a file. */
  live(db: Db): ReturnType<typeof liveWorkers>;
  clear(): void;
}

/** The one orchestrator of a file. */
export const LONE_FLEET: Fleet = {
  shared: false,
  leaseMs: null,
  ownerId: undefined,
  asking: () => false,
  claim: async () => undefined,
  settle: () => new Map(),
  adoptScope: () => undefined,
  adopted: async () => {},
  hold: () => {},
  fenceOf: (_id, token) => token,
  ended: () => {},
  blocked: false,
  block: () => {},
  claimedAmong: undefined,
  localWindow: (size) => size,
  followShare: () => false,
  inFlightElsewhere: async () => 0,
  openInStage: async () => 0,
  leads: undefined,
  retire: () => {},
  live: async () => [],
  clear: () => {},
};

/** One of several workers, holding `lease`. */
export class SharedFleet implements Fleet {
  readonly shared = true;
  /** The claims the commit being made asks for, and what it was granted (step -> its fence). */
  private claiming: ClaimAsk[] = [];
  /** By stage, this worker's subclouds that leave flight in the commit being made. */
  private ending = new Map<number, number>();
  private granted = new Map<number, number>();
  /** The claims of the commit being made that were refused: their transitions are left out of it. */
  private refusals = new Map<number, Refusal>();
  /** Each claimed step's claim count, for its runs' DCM_FENCE. */
  private readonly fences = new Map<number, number>();
  /** The steps this worker holds, claimed or adopted: their next operations need no claim. */
  private readonly mine = new Set<number>();
  private claimTimer: Timer | null = null;
  blocked = false;
  claimedAmong: readonly ShareOf[] | undefined = undefined;
  /** Each live worker and its `--max-local` (null: none), as the last heartbeat read them: the share's input. */
  private workers: readonly ShareOf[] = [];

  constructor(
    private readonly lease: WorkerLease,
    private readonly rt: Pick<ProcessRuntime, 'timers' | 'procs' | 'host'>,
  ) {}

  get ownerId(): number {
    return this.lease.id;
  }

  get leaseMs(): number {
    return this.lease.leaseMs;
  }

  asking(batch: readonly Transition[], slotStep: (stepId: number) => CursorStep): boolean {
    this.granted = new Map();
    this.refusals = new Map();
    this.claiming = [];
    this.ending = new Map();
    for (const t of batch) {
      if (this.mine.has(t.stepId)) {
        // Its end is written in this commit: its slot is free for the claims the commit makes.
        if (leavesFlight(t)) {
          const stage = slotStep(t.stepId).stage;
          this.ending.set(stage, (this.ending.get(stage) ?? 0) + 1);
        }
        continue;
      }
      const step = slotStep(t.stepId);
      this.claiming.push({ id: t.stepId, stage: step.stage, state: step.state });
    }
    return this.claiming.length > 0;
  }

  async claim(db: Db, firstLimit?: { ids: ReadonlySet<number>; max: number }): Promise<ReadonlySet<number> | undefined> {
    if (!this.claiming.length) return undefined;
    const r = await claimSteps(db, this.lease.id, this.lease.maxLocal, this.claiming, firstLimit, this.ending);
    if (r.workers) this.claimedAmong = r.workers;
    this.granted = r.granted;
    // The refused are left out of this commit, not the commit given up: a rolled-back try would
    // hold the writers' lock once more for the same batch, and every worker waits on it.
    this.refusals = r.refused;
    return r.refused.size ? new Set(r.refused.keys()) : undefined;
  }

  settle(committed: boolean): Map<number, Refusal> {
    this.claiming = [];
    const refusals = this.refusals;
    this.refusals = new Map();
    if (!committed) return new Map();
    for (const [stepId, fence] of this.granted) {
      this.fences.set(stepId, fence);
      this.mine.add(stepId);
    }
    this.granted = new Map();
    return refusals;
  }

  adoptScope(skip: (id: number) => boolean): { owner: number; skip: (id: number) => boolean; host: string } {
    return { owner: this.lease.id, skip, host: this.lease.host };
  }

  async adopted(db: Db, ids: readonly number[]): Promise<void> {
    for (const [id, fence] of (await stepFences(db, ids))) this.fences.set(id, fence);
  }

  hold(stepId: number): void {
    this.mine.add(stepId);
  }

  fenceOf(stepId: number): string {
    return this.lease.fenceOf(this.fences.get(stepId) ?? 0);
  }

  ended(stepId: number): void {
    this.fences.delete(stepId);
    // A slot is free (of the share, of the window): claims refused as full may be asked again now.
    if (this.mine.delete(stepId) && this.blocked) this.unblock();
  }

  block(pump: () => void): void {
    this.blocked = true;
    if (this.claimTimer) return;
    this.claimTimer = this.rt.timers.after(() => {
      this.claimTimer = null;
      this.blocked = false;
      pump();
    }, CLAIM_RETRY_MS);
  }

  private unblock(): void {
    this.claimTimer?.clear();
    this.claimTimer = null;
    this.blocked = false;
  }

  /** Its `--max-local`, or its share (store/workers.ts), so that it does not ask for claims it would be refused. */
  localWindow(size: number): number {
    return Math.min(size, this.lease.maxLocal ?? shareOfWindow(size, this.workers, this.lease.id));
  }

  followShare(workers: readonly ShareOf[]): boolean {
    const same = (a: ShareOf, b: ShareOf | undefined) => b !== undefined && a.id === b.id && a.cap === b.cap;
    if (workers.length === this.workers.length && workers.every((w, i) => same(w, this.workers[i]))) return false;
    this.workers = workers;
    return true;
  }

  async inFlightElsewhere(db: Db): Promise<number> {
    return await inFlightElsewhere(db, this.lease.id);
  }

  async openInStage(db: Db, stage: number): Promise<number> {
    return (await stageElsewhere(db, this.lease.id, stage)).open;
  }

  readonly leads = async (db: Db): Promise<boolean> => await leadWorker(db) === this.lease.id;

  retire(): void {
    this.lease.retire();
  }

  live(db: Db): ReturnType<typeof liveWorkers> {
    return liveWorkers(db, this.rt);
  }

  clear(): void {
    this.claimTimer?.clear();
    this.claimTimer = null;
  }
}
