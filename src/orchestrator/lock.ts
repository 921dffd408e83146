/**
 * One orchestrator per file (SPEC §2.1, §6). The lock row names the holder and carries a fencing
 * token; every transaction of the orchestrator checks the token (`check()`), so a holder that was
 * taken over (a stopped process continued, a host that came back) writes nothing more.
 *
 * Liveness: on this host, a holder is alive while its pid runs with the same process start time,
 * however old its heartbeat (a stopped or hung process is alive, and taking it over would make two
 * orchestrators). On another host the pid means nothing here: a heartbeat older than 30 s is dead.
 */
import crypto from 'node:crypto';
import type { Timer } from '../platform/timers.js';
import type { ProcessRuntime } from '../platform/runtime.js';
import { DcmError, EXIT } from '../domain/errors.js';
import { hostName } from '../platform/who.js';
import type { Db } from '../store/open.js';
import { beat, holdsLock, lastHolder, readLock, releaseLock, writeLock, type LockRow } from '../store/lock.js';

export const HEARTBEAT_MS = 5_000;
export const STALE_MS = 30_000;

/** This machine's name for the lock: `$DCM_HOST` (containers often share a host name), else the host name. */
export { hostName };

/** What the lock asks of a runtime: its clock, its host's processes, and its host's name. */
export type LockSight = Pick<ProcessRuntime, 'clock' | 'procs' | 'host'>;

/** Is the process named by the lock row still running (this host), or still writing (another)? */
export function holderAlive(row: LockRow, rt: LockSight, nowMs = rt.clock.wall()): boolean {
  const fresh = nowMs - row.heartbeat_ms <= STALE_MS;
  if (row.host !== rt.host) return fresh;
  if (!rt.procs.alive(row.pid)) return false;
  const start = rt.procs.startOf(row.pid);
  // Without a recorded start time (a lock from an older dcm) the heartbeat decides, as it did then.
  if (!row.proc_start || !start) return row.proc_start ? true : fresh;
  return start === row.proc_start;
}

/**
 * What apply says when it took the lock over: on this host the holder's process is gone; on
 * another host nothing here can tell, only that its heartbeat stopped (it may be alive, and
 * stopped or cut off).
 */
export function takeoverNote(row: LockRow, rt: LockSight, nowMs = rt.clock.wall()): string {
  const age = `its heartbeat was ${Math.floor((nowMs - row.heartbeat_ms) / 1000)} s old`;
  let why: string;
  if (row.host !== rt.host) why = age;
  else if (!rt.procs.alive(row.pid)) why = 'no longer running';
  else if (row.proc_start && rt.procs.startOf(row.pid) !== row.proc_start) why = `pid ${row.pid} is now another process`;
  else why = age; // a lock from a dcm that recorded no start time: the heartbeat decided
  return `took over the apply lock of pid ${row.pid} on ${row.host} (${why})`;
}

/** This process lost the lock: it writes nothing more and exits 4. */
export class LostLockError extends DcmError {
  readonly code = 'DCM_LOST_LOCK';
  constructor(holder: LockRow | undefined) {
    super(
      holder ? `lost the apply lock to pid ${holder.pid} on host ${holder.host}` : 'lost the apply lock: it was removed by another process',
      EXIT.locked,
    );
  }
}

export class ApplyLock {
  private timer: Timer | null = null;
  readonly host: string;
  readonly pid: number;
  readonly token: string;

  constructor(
    private readonly db: Db,
    private readonly file: string,
    /** The process's runtime: its host, its pid, its clock and timers (the simulator's process's, in src/sim). */
    private readonly rt: ProcessRuntime,
    token = crypto.randomBytes(12).toString('hex'),
  ) {
    this.host = rt.host;
    this.pid = rt.procs.self;
    this.token = token;
  }

  /**
   * Take the lock or throw (exit 4) naming the live holder. `also` runs in the same transaction,
   * after the lock is written (the apply's start and its record, through `tx`, the transaction's
   * handle); what it throws undoes the take.
   */
  async acquire(also?: (tx: Db, tookOverFrom: LockRow | undefined) => Promise<void>): Promise<{ tookOverFrom?: LockRow }> {
    return await this.db
      .transaction(async (tx) => {
        const row = await readLock(tx);
        const nowMs = this.rt.clock.wall();
        if (row && row.token !== this.token && holderAlive(row, this.rt, nowMs)) {
          const age = Math.floor((nowMs - row.heartbeat_ms) / 1000);
          const silent =
            age * 1000 > STALE_MS ? `; pid ${row.pid} is alive but has not written for ${age} s; if it is hung, stop it` : '';
          throw new DcmError(
            `another orchestrator holds ${this.file}: pid ${row.pid} on host ${row.host} since ${row.started_at}${silent}`,
            EXIT.locked,
          );
        }
        await writeLock(tx, { pid: this.pid, host: this.host, token: this.token, procStart: this.rt.procs.startOf(this.pid) });
        await also?.(tx, row);
        return row ? { tookOverFrom: row } : {};
      })
      .immediate();
  }

  /** The fence: call inside every transaction of the holder (`tx`, its handle); throws LostLockError once taken over. */
  async check(tx: Db): Promise<void> {
    if (!await holdsLock(tx, this.token)) throw new LostLockError(await lastHolder(tx));
  }

  /** Keep the heartbeat fresh; `onLost` runs once if another process took the lock over. */
  startHeartbeat(onLost: (err: LostLockError) => void | Promise<void>, onError: (err: Error) => void | Promise<void> = () => {}): void {
    this.timer = this.rt.timers.every(async () => {
      try {
        if (!await beat(this.db, this.token)) {
          this.stopHeartbeat();
          await onLost(new LostLockError(await lastHolder(this.db)));
        }
      } catch (err) {
        // A busy or full file: the next beat tries again; the orchestrator's own writes say what is wrong.
        await onError(err as Error);
      }
    }, HEARTBEAT_MS);
    this.timer.unref();
  }

  stopHeartbeat(): void {
    this.timer?.clear();
    this.timer = null;
  }

  /** Let go of the lock (only if still ours; a write to a file that is still ours). */
  async release(): Promise<void> {
    this.stopHeartbeat();
    if (this.db.open) await releaseLock(this.db, this.token);
  }
}
