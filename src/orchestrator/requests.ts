/**
 * Requests from outside the orchestrator's own process: an abort, a pause or resume, a window or
 * failure-budget change (written to the file by `dcm strategy abort|pause|resume|update` from any
 * shell), and the file itself removed or replaced. Found by polling `PRAGMA data_version`, which
 * moves only when another connection has committed: the strategy row is read only then, so an
 * idle poll costs one pragma. Each change is handed to the orchestrator until its handler has
 * carried it out: a change counts as seen only once its effect has committed, so a handler whose
 * write finds the file busy gets the same change again on the next poll. What to do about a change
 * is the orchestrator's business (it alone owns the registry).
 */
import type { Timer } from '../platform/timers.js';
import type { TimeSource } from '../platform/runtime.js';
import type { Db } from '../store/open.js';
import { faultOf } from '../store/faults.js';
import { controlSnapshot, dataVersion } from '../store/strategy.js';
import { CONTROL_EVENTS } from '../domain/events.js';

/** The states a strategy ends in. */
const ENDED: readonly string[] = ['complete', 'failed', 'aborted'];

export interface RequestHandlers {
  /** The strategy is `abort requested`: seen once its write has committed (a busy store throws, and the poll asks again). */
  abort(): Promise<void>;
  /** Paused (true) or resumed (false). */
  pause(on: boolean): void;
  /** A stage's window changed. */
  window(stage: number, window: number): void;
  /** A stage's start rate changed (as stored: domain/start-rate.ts, or null for none). */
  rate?(stage: number, stored: string | null): void;
  /** The failure budget changed (as stored: `3`, `5%`, or null). */
  budget(text: string | null): void;
  /** The file cannot be read any more (gone, replaced, damaged). */
  fail(err: Error): void;
  /** Whether `err` is a busy file (said once by the orchestrator): the change is asked again. */
  busy(err: unknown): boolean;
  /** Another worker of the strategy ended it (orchestrator/workers.ts): this one starts nothing more. */
  ended?(state: string): void;
  /** Another process committed something: what is not in the snapshot (the running stage's budget) is read again. */
  changed?(): Promise<void>;
  /** `strategy abort --now` (its event's id): the runs in flight are stopped; after the abort's own change. */
  abortNow?(eventId: number): Promise<void>;
}

export interface Snapshot {
  state: string;
  maxFailures: string | null;
  windows: Map<number, number>;
  /** Each stage's start rate as stored (absent: none). */
  rates?: Map<number, string | null>;
  /** The latest `strategy abort --now` of this abort (an event's id), or null. */
  abortNow?: number | null;
  /** The latest `strategy resume` (an event's id), or null. */
  resumed?: number | null;
}

export class ExternalRequests {
  private timer: Timer | null = null;
  private lastDataVersion = -1;
  private lastFileCheck = 0;
  private last: Snapshot;

  constructor(
    private readonly db: Db,
    private readonly handlers: RequestHandlers,
    private readonly opts: { pollMs?: number; checkFile?: () => void; rt: TimeSource },
    /** What the orchestrator started from: only later changes are requests. */
    start: Snapshot,
  ) {
    this.last = { ...start, windows: new Map(start.windows), rates: new Map(start.rates ?? []) };
  }

  start(): void {
    this.timer = this.opts.rt.timers.every(() => this.poll(), this.opts.pollMs ?? 250);
  }

  stop(): void {
    this.timer?.clear();
    this.timer = null;
  }

  /** Look now, whatever `data_version` says: a commit found a stop in the file the poll has not seen yet. */
  async lookNow(): Promise<void> {
    this.lastDataVersion = -1;
    await this.poll();
  }

  /**
   * Look now (also called by the timer). Cheap when nothing changed. Looks take turns: two at once
   * would both see a change and carry it out twice.
   */
  poll(): Promise<void> {
    this.looking = this.looking.then(() => this.look());
    return this.looking;
  }

  private looking: Promise<void> = Promise.resolve();

  private async look(): Promise<void> {
    try {
      const t = this.opts.rt.clock.mono();
      if (this.opts.checkFile && t - this.lastFileCheck >= 500) {
        this.lastFileCheck = t;
        this.opts.checkFile();
      }
      const version = await dataVersion(this.db);
      if (version === this.lastDataVersion) return;
      this.lastDataVersion = version;
      const now = await controlSnapshot(this.db, CONTROL_EVENTS);
      if (!now) return;
      await this.compare(now);
      await this.handlers.changed?.();
    } catch (err) {
      // A busy file: the next poll looks again (data_version is read anew, so nothing is missed).
      if (faultOf(err) === 'busy' || this.handlers.busy(err)) {
        this.lastDataVersion = -1;
        return;
      }
      this.handlers.fail(err as Error);
    }
  }

  /** Each change is recorded as seen right after its handler returned (a throw leaves it unseen). */
  private async compare(now: Snapshot): Promise<void> {
    const last = this.last;
    for (const [stage, w] of now.windows) {
      if (last.windows.get(stage) === w) continue;
      this.handlers.window(stage, w);
      last.windows.set(stage, w);
    }
    for (const [stage, r] of now.rates ?? []) {
      if ((last.rates?.get(stage) ?? null) === r) continue;
      this.handlers.rate?.(stage, r);
      last.rates?.set(stage, r);
    }
    if (now.maxFailures !== last.maxFailures) {
      this.handlers.budget(now.maxFailures);
      last.maxFailures = now.maxFailures;
    }
    if (now.state !== last.state) {
      // 'aborting': another worker of the strategy carried the abort out first (orchestrator/workers.ts).
      if (now.state === 'abort requested' || now.state === 'aborting') await this.handlers.abort();
      else if (ENDED.includes(now.state)) this.handlers.ended?.(now.state);
      else if (now.state === 'paused') this.handlers.pause(true);
      else if (now.state === 'applying' && last.state === 'paused') this.handlers.pause(false);
      last.state = now.state;
    } else if (now.state === 'applying' && (now.resumed ?? null) !== (last.resumed ?? null)) {
      // `pause && resume` both between two looks: the state is as it was, the resume's event says
      // they happened, and a resume is what makes the maintenance windows be read again.
      this.handlers.pause(true);
      this.handlers.pause(false);
    }
    last.resumed = now.resumed;
    if (now.abortNow != null && now.abortNow !== last.abortNow) {
      await this.handlers.abortNow?.(now.abortNow);
      last.abortNow = now.abortNow;
    }
  }
}
