/**
 * One of several orchestrators applying one strategy on a PostgreSQL store (README "Several
 * hosts"). In place of the one-per-file apply lock, each `apply` joins as a worker: a row holding
 * a lease, renewed by its heartbeat, checked first in every transaction it makes (the fence), so
 * that a worker whose row is gone writes nothing more and stops with exit 4.
 *
 * A worker is gone once its lease has run out (killed, its host down, frozen past the lease), or,
 * seen from its own host, once its process is no longer running. Whoever sees that first, in its
 * heartbeat or as it joins, takes it over in one transaction: its row goes and its subclouds are
 * free for any worker to claim. Its runs still going are adopted: a taker on the same host waits
 * for them through their pid files, as a restarted apply does; one on another host waits for the
 * ends their launcher writes to the store (orchestrator/remote-runs.ts). A run whose end never
 * comes within its bound is held as of unknown outcome, never run again by itself: its host is
 * not proven gone (only its launcher's end, or the operator, proves it). A state that says
 * `on_lost_host: rerun` runs it again then, at least once, with DCM_RESUMED=1 and a new DCM_FENCE
 * that the site checks to refuse the old one.
 */
import crypto from 'node:crypto';
import { DcmError, EXIT } from '../domain/errors.js';
import type { Timer } from '../platform/timers.js';
import type { ProcessRuntime } from '../platform/runtime.js';
import type { Db } from '../store/open.js';
import { addWorker, beatWorker, fenceAtBegin, holdsWorker, leaveWorker, listWorkers, storeClockMs, takeOver, type WorkerRow } from '../store/workers.js';

/** A worker not heard from for this long is gone (`apply --lease`). */
export const LEASE_MS = 30_000;

/** This worker's row is gone: another worker took its subclouds over. It writes nothing more. */
export class LostLeaseError extends DcmError {
  readonly code = 'DCM_LOST_LEASE';
  constructor(leaseMs: number) {
    super(`lost this worker's lease (not renewed within ${Math.round(leaseMs / 1000)} s): its subclouds were taken over by another worker`, EXIT.locked);
  }
}

/** A worker taken over: who it was, and what became of its runs. */
export interface TakenOver {
  worker: WorkerRow;
  why: string;
  adopted: number;
  interrupted: number;
}

/** What the lease asks of a runtime: its clocks and timers, its host's processes and name. */
export type LeaseRuntime = Pick<ProcessRuntime, 'clock' | 'timers' | 'procs' | 'host'>;

export class WorkerLease {
  readonly host: string;
  readonly pid: number;
  readonly token: string;
  /** The row's id, once joined: the steps this worker claims name it. */
  id = 0;
  private timer: Timer | null = null;
  /** Records a takeover in the event record, in the transaction that makes it. */
  record: ((t: TakenOver, tx: Db) => Promise<void>) | null = null;
  /**
   * Runs of a worker gone from another host are kept `running` for this one to wait for (their
   * ends reach the store from their host: orchestrator/remote-runs.ts) rather than closed to run again.
   */
  adoptsElsewhere = false;
  /** Whether this worker still runs the strategy, and so may take others' subclouds over. */
  private taking = true;
  /**
   * Until when (the monotonic clock) this worker takes nobody over: a lease after it was last kept
   * from the store itself (a renewal failed; its join waited for a lock). What kept it away (another
   * session's LOCK TABLE apply_worker, a server restarting, a partition) may have kept the others'
   * renewals away too: their leases are judged once they could have been renewed again.
   */
  private blindUntil = -Infinity;

  /**
   * The connection the lease is renewed on: its own on a server, so that a renewal never waits
   * behind the writers' lock (nor behind this worker's own write waiting for it).
   */
  private readonly beatDb: Db;

  constructor(
    private readonly db: Db,
    readonly leaseMs: number,
    readonly maxLocal: number | null,
    /** The worker's process: its host and pid, clocks, timers (the simulator's process's, in src/sim). */
    private readonly rt: LeaseRuntime,
    who: { beatDb?: Db; token?: string } = {},
  ) {
    this.host = rt.host;
    this.pid = rt.procs.self;
    this.token = who.token ?? crypto.randomBytes(12).toString('hex');
    this.beatDb = who.beatDb ?? db;
  }

  /**
   * Join in one transaction with `also` (the apply's start and its record): then the workers that
   * are gone are taken over, and the steps left with a run still `running` and no worker (an
   * apply of one orchestrator that was killed) become this one's, to adopt.
   */
  async join(also?: (tx: Db) => Promise<void>): Promise<TakenOver[]> {
    const taken = await this.db
      .transaction(async (tx) => {
        this.id = await addWorker(tx, { host: this.host, pid: this.pid, procStart: this.rt.procs.startOf(this.pid), token: this.token, leaseMs: this.leaseMs, maxLocal: this.maxLocal });
        // The start first, then the takeovers: the event record says so in that order, as for a file's lock.
        await also?.(tx);
        const taken = this.blind() ? [] : await this.takeOverGone(tx);
        await tx
          .prepare(
            `UPDATE strategy_step SET owner = $1, fence = fence + 1 WHERE owner IS NULL
               AND EXISTS (SELECT 1 FROM step_history h WHERE h.step_id = strategy_step.id AND h.outcome = 'running')`,
          )
          .run(this.id);
        return taken;
      })
      .immediate();
    fenceAtBegin(this.db, this);
    return taken;
  }

  /** This worker was kept from the store just now (its renewal failed, its join waited): it takes nobody over for a lease. */
  keptAway(): void {
    this.blindUntil = this.rt.clock.mono() + this.leaseMs;
  }

  private blind(): boolean {
    return this.rt.clock.mono() < this.blindUntil;
  }

  /** The fence: inside every transaction of this worker (`tx`, its handle); throws once its row is gone. */
  async check(tx: Db): Promise<void> {
    if (!await holdsWorker(tx, this.id, this.token)) throw new LostLeaseError(this.leaseMs);
  }

  /** The DCM_FENCE of a run: this worker, and how many times its step was claimed. */
  fenceOf(claims: number): string {
    return `${this.token}.${claims}`;
  }

  /**
   * Renew the lease well within it, and take over the workers that are gone. `onLost`: this row is
   * gone; `onBeat`: the lease was renewed, and `takeOver` takes over the workers gone (their
   * subclouds are free, or this worker's to adopt), called when no commit of the worker's is out.
   */
  startHeartbeat(
    onLost: (err: LostLeaseError) => void | Promise<void>,
    onError: (err: Error) => void | Promise<void>,
    onBeat: (takeOver: () => Promise<TakenOver[]>) => void | Promise<void>,
  ): void {
    const failed = async (err: unknown) => {
      if (err instanceof LostLeaseError) {
        this.stopHeartbeat();
        await onLost(err);
      } else {
        // A busy store or a lost connection: the next beat tries again; the orchestrator's own writes say what is wrong.
        await onError(err as Error);
      }
    };
    // The rest of a beat (takeovers, then the orchestrator's look at the fleet) waits for the main
    // connection, maybe behind the writers' lock, and for the worker's commit out: the renewals go
    // on meanwhile, never waiting for either.
    let looking = false;
    const look = async () => {
      try {
        await onBeat(() => this.takeOverIfGone());
      } catch (err) {
        await failed(err);
      } finally {
        looking = false;
      }
    };
    this.timer = this.rt.timers.every(async () => {
      try {
        // The renewal alone, outside the writers' lock: a worker that waits for the lock (another
        // session holds it) is alive, and is never taken for gone for that wait. It renews only
        // its own row, while it is there: a worker taken over renews nothing.
        if (!await beatWorker(this.beatDb, this.id, this.token)) throw new LostLeaseError(this.leaseMs);
      } catch (err) {
        // Not renewed (the renewal takes no lock of dcm's: another session's lock, or the server away).
        if (!(err instanceof LostLeaseError)) this.keptAway();
        await failed(err);
        return;
      }
      if (looking || !this.timer) return;
      looking = true;
      void look();
    }, heartbeatMs(this.leaseMs));
    this.timer.unref();
  }

  /** The takeovers, under the writers' lock, only when a worker looks gone (a read first). */
  private async takeOverIfGone(): Promise<TakenOver[]> {
    if (!this.taking || this.blind() || !await this.someoneGone()) return [];
    return await this.db
      .transaction(async (tx) => {
        await this.check(tx);
        return await this.takeOverGone(tx);
      })
      .immediate();
  }

  /**
   * The orchestrator has stopped (its end, a fatal error): the lease is still renewed until the
   * worker leaves, but it takes nobody over any more. A takeover now would make this worker the
   * owner of runs it will never wait for, and its leaving would close them as interrupted while
   * they still run: their states would run twice.
   */
  retire(): void {
    this.taking = false;
  }

  stopHeartbeat(): void {
    this.timer?.clear();
    this.timer = null;
  }

  /** Leave: the row goes and the subclouds this worker still held are free (only if still its own). */
  async leave(): Promise<void> {
    this.stopHeartbeat();
    if (!this.db.open || !this.id) return;
    // Its last transaction checks its fence itself; the connection's later ones have none.
    fenceAtBegin(this.db, null);
    try {
      await this.db
        .transaction(async (tx) => {
          if (!await holdsWorker(tx, this.id, this.token)) throw new LostLeaseError(this.leaseMs);
          await leaveWorker(tx, this.id);
        })
        .immediate();
    } catch (err) {
      // Taken over already: nothing of this worker is left to remove, and nothing is committed.
      if (!(err instanceof LostLeaseError)) throw err;
    }
  }

  /** Whether another worker looks gone, as read now (without the writers' lock). */
  private async someoneGone(): Promise<boolean> {
    const nowMs = await storeClockMs(this.beatDb);
    return (await listWorkers(this.beatDb)).some((w) => w.id !== this.id && goneWhy(w, nowMs, this.rt) !== null);
  }

  /** Inside a transaction (`tx`): every other worker that is gone is taken over by this one. */
  private async takeOverGone(tx: Db): Promise<TakenOver[]> {
    const out: TakenOver[] = [];
    const nowMs = await storeClockMs(tx);
    const rows = await listWorkers(tx);
    // Hosts with a worker still heard from: a worker gone there is theirs to take over, since
    // only they can see its runs and adopt them rather than run them again.
    const heardOn = (host: string, except: number) => rows.some((o) => o.id !== except && o.host === host && nowMs - o.heartbeat_ms <= o.lease_ms);
    for (const w of rows) {
      if (w.id === this.id) continue;
      const why = goneWhy(w, nowMs, this.rt);
      if (!why) continue;
      const sameHost = w.host === this.host;
      if (!sameHost && heardOn(w.host, w.id)) continue;
      const r = await takeOver(tx, w, this.id, sameHost || this.adoptsElsewhere, `its worker (pid ${w.pid} on ${w.host}) is gone: ${why}`);
      // Renewed since it was read (its renewal takes no lock): alive after all, and left alone.
      if (!r) continue;
      const t = { worker: w, why, ...r };
      await this.record?.(t, tx);
      out.push(t);
    }
    return out;
  }
}

/** The workers not gone, as seen from this host: an abort from any shell leaves the strategy to them. */
export async function liveWorkers(db: Db, rt: Pick<ProcessRuntime, 'procs' | 'host'>, nowMs?: number): Promise<WorkerRow[]> {
  const at = nowMs ?? await storeClockMs(db);
  return (await listWorkers(db)).filter((w) => goneWhy(w, at, rt) === null);
}

/** How often the lease is renewed: a third of it, at most every 5 s. */
export function heartbeatMs(leaseMs: number): number {
  return Math.max(50, Math.min(5_000, Math.floor(leaseMs / 3)));
}

/** Why worker `w` is gone (null: it is not). Its lease decides (`nowMs` on the store's clock); on its own host, its process too. */
export function goneWhy(w: WorkerRow, nowMs: number, rt: Pick<ProcessRuntime, 'procs' | 'host'>): string | null {
  const age = nowMs - w.heartbeat_ms;
  if (age > w.lease_ms) return `its lease ran out (heartbeat ${(age / 1000).toFixed(1)} s old, lease ${(w.lease_ms / 1000).toFixed(1)} s)`;
  if (w.host !== rt.host) return null;
  if (!rt.procs.alive(w.pid)) return 'no longer running';
  const start = rt.procs.startOf(w.pid);
  if (w.proc_start && start && start !== w.proc_start) return `pid ${w.pid} is now another process`;
  return null;
}
