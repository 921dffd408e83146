/**
 * One stage's window (SPEC §5: a sliding window of max parallel subclouds), bounded by p-limit as
 * the design card says: its settable `concurrency` is the live resize, a gate awaited inside each
 * task is the pause and the hold-back, and `clearQueue` (made with `rejectOnClear`) is the hard
 * stop. The limiter is fed from the file by a cursor a window's worth at a time, so the process
 * holds about a window of steps whatever the fleet.
 *
 * A subcloud takes a slot from its first state to its end. A task waiting at the gate holds its
 * place, never a slot: a window made smaller starts none until fewer than N are in flight (p-limit
 * alone would let the tasks already running go on), and a subcloud held back keeps its place in
 * step order for when the gate opens again.
 *
 * A subcloud not yet started whose maintenance window is closed (`hold`) is set aside instead, off
 * the limiter, so it holds neither a slot nor a place the others of its stage need; it goes back to
 * the limiter when a timer says its window opens (or at any pump after that). The stage ends only
 * once those set aside have run too, or when nothing new may start any more (a stop).
 *
 * It never sees the registry of workers: it asks its owner to run a subcloud and learns when the
 * subcloud has ended (or was held back before it started).
 */
import pLimit, { type LimitFunction } from 'p-limit';
import { mayTakeSlot, type Gate } from '../domain/control.js';
import type { CursorStep } from '../store/cursor.js';
import { before, kindOf, type Entry, type Waiter } from './window-entries.js';
import { AsideSteps } from './window-aside.js';
import type { Timer } from '../platform/timers.js';
import type { TimeSource } from '../platform/runtime.js';

export interface WindowHost {
  /** Up to `limit` more of the stage's open steps, in order; fewer once there are no more. */
  fetch(limit: number): Promise<CursorStep[]>;
  gate(): Gate;
  /**
   * Run the subcloud to its end. Resolves true once it has ended, false when it was held back
   * before its first state started (it then waits at the gate again, in its place).
   */
  run(step: CursorStep): Promise<boolean>;
  /** Feeding or running failed (a read of the file): the apply cannot go on. */
  failed(err: Error): void;
  /**
   * A subcloud about to start its first state: null when it may, else the milliseconds until it
   * may (its maintenance window opens). Absent: none ever waits.
   */
  hold?(step: CursorStep): number | null;
  /**
   * Deferred steps of this stage waiting for their next try (they hold no slot): the stage does not
   * end while there are some, unless nothing new may start any more.
   */
  deferred?(): number;
  /**
   * No subcloud may take a slot for now, whatever this window's room: the stage's window across
   * several workers is full (orchestrator/workers.ts). The owner pumps when that may have changed.
   */
  blocked?(): boolean;
  /**
   * A subcloud about to start its first state: null when it may ask for its start now, else the
   * milliseconds until it may (the start rate, orchestrator/pacer.ts). Absent: none ever waits.
   */
  pace?(): number | null;
}

/** Steps read ahead of need: enough for a window refilling, few enough to stay small. */
const READ_AHEAD_MAX = 256;

/**
 * Subclouds set aside for their maintenance window before the cursor stops reading past them: the
 * others of a stage behind up to this many waiting ones still start, and the process holds no
 * more than this many more steps, whatever the stage (a stage of one group waits as a whole).
 */
const ASIDE_MAX = 4096;

export class StageWindow {
  private readonly limit: LimitFunction;
  /** The window's size (the limiter's concurrency is this and the slots lent). */
  private size: number;
  /** Subclouds holding a slot: asked to run and not yet ended (or held back). */
  private taken = 0;
  /**
   * Subclouds whose end is in the commit being made: each lends its slot to a waiting subcloud,
   * whose first start goes in that same commit (lend), and holds it no more once it has ended.
   */
  private readonly lentBy = new Set<number>();
  /** Tasks waiting at the gate, in step order (caught mid-state first, then by id, as the cursor reads). */
  private waiters: Waiter[] = [];
  /** Tasks handed to the limiter and not yet settled. */
  private outstanding = 0;
  /**
   * Every step in the window, by id: a step is in it once. One of several workers reads its stage
   * again (a rescan) while a subcloud it adopted in a takeover, or one whose deferral came due, is
   * in it already: a second task of that step would wait in the limiter behind a full window and,
   * once the first had ended, start the step again from the state it was read at (the several-hosts
   * issue's abort during a takeover that never ended: a stale start whose claim, refused while
   * aborting, was asked again and again; and a step deferred after an abort, started again from
   * its old state). A newer read of a step not yet running replaces the older one (a subcloud
   * adopted in a takeover, read before as new and waiting at the gate, goes on as adopted); one of
   * a step running is dropped.
   */
  private readonly entries = new Map<number, Entry>();
  private exhausted = false;
  /**
   * A read of the stage is under way (the store answers when it does): reads take turns, each from
   * where the last one ended, and a pump meanwhile asks for another once it is over.
   */
  private feeding = false;
  private feedAgain = false;
  /** Rescans so far: a read begun before the last one is dropped, and the stage read again in order. */
  private rescans = 0;
  /** A step never started was read (the cursor reads those caught mid-state first). */
  private sawNew = false;
  private done: (() => void) | null = null;
  private finished = false;
  /** Subclouds set aside until their maintenance window opens (window-aside.ts). */
  private readonly aside: AsideSteps;
  /** The start rate's wait: one timer, at the end of the wait the pacer last said. */
  private paceTimer: Timer | null = null;

  constructor(
    size: number,
    private readonly host: WindowHost,
    /** Its waits for maintenance windows count on the monotonic clock. */
    private readonly rt: TimeSource,
  ) {
    this.size = Math.max(1, size);
    this.limit = pLimit({ concurrency: this.size, rejectOnClear: true });
    this.aside = new AsideSteps(rt, (step) => this.host.hold?.(step) ?? null, () => this.pump());
  }

  get window(): number {
    return this.size;
  }

  /** Slots held: those lent count once, for the subcloud that took them. */
  get running(): number {
    return this.taken - this.lentBy.size;
  }

  /** Slots lent by subclouds still ending. */
  get lent(): number {
    return this.lentBy.size;
  }

  /** Resolves when every step of the stage has ended, or when stopping and none is in flight. */
  run(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.done = resolve;
      this.pump();
    });
  }

  /** A larger window starts more at once; a smaller one starts none until fewer than `n` run. */
  resize(n: number): void {
    this.size = Math.max(1, n);
    this.limit.concurrency = this.size + this.lentBy.size;
    this.pump();
  }

  /**
   * The subclouds `stepIds` end in the commit being made: their slots are lent to the next
   * subclouds waiting, whose first starts are queued now and so go in that same commit (issue 51:
   * on a server a refill waited for the end's commit, then for a commit of its own). The stage's
   * count in flight is the same after that commit as before it. Returns how many were lent.
   */
  lend(stepIds: readonly number[]): number {
    let n = 0;
    for (const id of stepIds) {
      if (!this.entries.get(id)?.running || this.lentBy.has(id)) continue;
      this.lentBy.add(id);
      n++;
    }
    if (n === 0) return 0;
    this.limit.concurrency = this.size + this.lentBy.size;
    this.pump();
    return n;
  }

  /** Something changed (a slot freed, the gate moved): wake the waiting, feed, end when nothing is left. */
  pump(): void {
    if (this.finished || !this.done) return;
    const g = this.host.gate();
    // Nothing will ever start again in this run: tasks still queued in the limiter are dropped.
    if (!g.operations) this.clearQueue();
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w.wake();
    try {
      for (const step of this.aside.bringBack(g.stopping)) this.submit(step);
    } catch (err) {
      this.host.failed(err as Error);
    }
    this.feed();
    this.checkEnd(g);
  }

  private feed(): void {
    if (this.feeding) {
      this.feedAgain = true;
      return;
    }
    this.feeding = true;
    this.feedAll().then(
      () => {
        this.feeding = false;
        if (this.feedAgain) {
          this.feedAgain = false;
          this.pump();
        } else this.checkEnd(this.host.gate());
      },
      (err: unknown) => {
        this.feeding = false;
        this.host.failed(err as Error);
      },
    );
  }

  private async feedAll(): Promise<void> {
    for (;;) {
      const g = this.host.gate();
      // Once stopping, only steps caught mid-state may still start; the cursor reads them first, so
      // the first new one read says there are no more (a stopped stage is not read to its end).
      const aside = Math.max(0, this.aside.size - ASIDE_MAX);
      if (this.finished || this.exhausted || (g.stopping && this.sawNew) || this.outstanding + aside >= this.size + READ_AHEAD_MAX) return;
      const want = Math.min(READ_AHEAD_MAX, this.size);
      const rescans = this.rescans;
      const more = await this.host.fetch(want);
      // Read again from the start meanwhile: this read is dropped (the rewound cursor reads it again).
      if (rescans !== this.rescans || this.finished) continue;
      if (more.length < want) this.exhausted = true;
      for (const step of more) {
        if (kindOf(step) === 'new') this.sawNew = true;
        this.submit(step);
      }
      if (more.length === 0) break;
    }
  }

  private submit(step: CursorStep): void {
    // A step caught mid-state is in flight already (SPEC §4): it waits at the gate, where those
    // caught mid-state go first, never in the limiter's queue behind tasks ahead of it. Queued
    // there, it was not at the gate when a slot freed, and a deferred step's next try waiting
    // beside the limiter took the slot: a new start past a window made smaller (simulator seed
    // 1794911513).
    if (kindOf(step) === 'resumed') return this.beside(this.enter(step, true));
    const e = this.enter(step, false);
    if (!e) return;
    this.outstanding++;
    this.limit(() => {
      e.started = true;
      return e.superseded ? Promise.resolve() : this.task(e);
    })
      .catch((err: unknown) => {
        // A queued task dropped by a hard stop is not an error.
        if ((err as Error)?.name !== 'AbortError') this.host.failed(err as Error);
      })
      .finally(() => this.leave(e));
  }

  /** The step's entry, new; null when it is in the window already (one not running takes the newer read). */
  private enter(step: CursorStep, started: boolean): Entry | null {
    const e = this.entries.get(step.id);
    if (e) {
      if (!e.running) e.step = step;
      return null;
    }
    const fresh = { step, started, running: false };
    this.entries.set(step.id, fresh);
    return fresh;
  }

  private leave(e: Entry): void {
    if (this.entries.get(e.step.id) === e) this.entries.delete(e.step.id);
    this.outstanding--;
    this.pump();
  }

  /** The limiter's queue is dropped: its steps leave the window now, not when their rejections settle. */
  private clearQueue(): void {
    this.limit.clearQueue();
    for (const [id, e] of this.entries) if (!e.started) this.entries.delete(id);
  }

  /**
   * A deferred step's next try is due: it waits at the gate for a slot, in step order, beside the
   * limiter's tasks rather than behind the steps it has read ahead (the slots, `taken`, bound the
   * window either way).
   */
  add(step: CursorStep): void {
    if (this.finished || !this.done) return;
    // Read already and queued behind the window: it goes now, beside the limiter, as added.
    const queued = this.entries.get(step.id);
    if (queued && !queued.started) {
      queued.superseded = true;
      this.entries.delete(step.id);
    }
    this.beside(this.enter(step, true));
  }

  /** The task of `e` (a step now in the window, or null: in it already), beside the limiter. */
  private beside(e: Entry | null): void {
    if (!e) return;
    this.outstanding++;
    this.task(e)
      .catch((err: unknown) => this.host.failed(err as Error))
      .finally(() => this.leave(e));
  }

  /**
   * Read the stage again from its start (the owner's fetch starts over): steps another worker let
   * go of are found without waiting for this pass to end. Those already taken are the owner's to skip.
   * What was read ahead and waits in the limiter's queue (never started) is dropped, to be read
   * again in order: else the steps let go, caught mid-state, would queue behind a read-ahead of
   * new ones and wait for it to drain before they take a slot.
   */
  rescan(): void {
    if (this.finished || !this.done) return;
    this.clearQueue();
    this.rescans++;
    this.exhausted = false;
    this.sawNew = false;
    this.pump();
  }

  /** The windows may have changed: every subcloud set aside is asked again at the next pump. */
  recheckAside(): void {
    this.aside.recheck();
  }

  private armPace(inMs: number): void {
    if (this.paceTimer) return;
    this.paceTimer = this.rt.timers.after(() => {
      this.paceTimer = null;
      this.pump();
    }, Math.max(1, Math.ceil(inMs)));
  }

  private checkEnd(g: Gate): void {
    if (this.finished || !this.done) return;
    const deferred = g.stopping ? 0 : (this.host.deferred?.() ?? 0);
    if (!this.feeding && this.outstanding === 0 && deferred === 0 && this.aside.size === 0 && (this.exhausted || (g.stopping && this.sawNew))) {
      this.finished = true;
      this.aside.stop();
      this.paceTimer?.clear();
      this.paceTimer = null;
      this.done();
    }
  }

  /** One subcloud, from waiting at the gate to its end. */
  private async task(e: Entry): Promise<void> {
    for (;;) {
      for (;;) {
        // Read at every look: a newer read of the step may have come meanwhile.
        const step = e.step;
        const kind = kindOf(step);
        const g = this.host.gate();
        if (!this.host.blocked?.() && mayTakeSlot(g, kind, this.running, this.size)) {
          // Its first state only inside its maintenance window: else aside, giving its place up. A
          // deferred step has started its first state already: its next try is no first start.
          const first = kind === 'new' && step.state !== 'deferred';
          const inMs = first ? (this.host.hold?.(step) ?? null) : null;
          if (inMs !== null) {
            this.aside.set(step, inMs);
            return;
          }
          // The start rate: it waits at the gate, in its place, until the next start may be asked for.
          const paceMs = first ? (this.host.pace?.() ?? null) : null;
          if (paceMs === null) break;
          this.armPace(paceMs);
        }
        // It can never start in this run (a stop): it stays as it is in the file.
        if (kind === 'new' ? g.stopping : !g.operations) return;
        await new Promise<void>((wake) => this.wait({ step, wake }));
      }
      this.taken++;
      e.running = true;
      let ended: boolean;
      try {
        ended = await this.host.run(e.step);
      } finally {
        this.taken--;
        e.running = false;
        // Its slot, if lent, is the borrower's now.
        if (this.lentBy.delete(e.step.id)) this.limit.concurrency = this.size + this.lentBy.size;
      }
      if (ended) return;
      // Held back while an abort is finished (no state starts after a run, nor caught mid-state):
      // it can never start in this run, and stays as it is for the abort's end. Asking again
      // would be held back again, for ever (a run adopted as ended, its step read again in its
      // next state: PostgreSQL pass, abort --now after a kill -9).
      if (this.host.gate().nextStates === false) return;
    }
  }

  /** Wait at the gate, in step order among those waiting. */
  private wait(w: Waiter): void {
    const at = this.waiters.findIndex((x) => before(w.step, x.step));
    if (at < 0) this.waiters.push(w);
    else this.waiters.splice(at, 0, w);
  }
}
