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
import { REAL_TIMERS, type Timer, type Timers } from '../platform/timers.js';
import { DcmError, EXIT } from '../domain/errors.js';
import { bootId, processAlive, readStat } from '../platform/proc.js';
import { hostName } from '../platform/who.js';
import type { Db } from '../store/open.js';
import { beat, holdsLock, lastHolder, readLock, releaseLock, writeLock, type LockRow } from '../store/lock.js';

export const HEARTBEAT_MS = 5_000;
export const STALE_MS = 30_000;

/** This machine's name for the lock: `$DCM_HOST` (containers often share a host name), else the host name. */
export { hostName };

/**
 * `<boot id>:<start time in clock ticks>` of a process, or null where that cannot be read. With
 * the pid it names one process: a pid reused after a crash has another start time.
 */
export function processStart(pid: number): string | null {
  const st = readStat(pid);
  return st ? `${bootId()}:${st.starttime}` : null;
}

/** Is the process named by the lock row still running (this host), or still writing (another)? */
export function holderAlive(row: LockRow, nowMs = Date.now(), host = hostName()): boolean {
  const fresh = nowMs - row.heartbeat_ms <= STALE_MS;
  if (row.host !== host) return fresh;
  if (!processAlive(row.pid)) return false;
  const start = processStart(row.pid);
  // Without a recorded start time (a lock from an older dcm) the heartbeat decides, as it did then.
  if (!row.proc_start || !start) return row.proc_start ? true : fresh;
  return start === row.proc_start;
}

/**
 * What apply says when it took the lock over: on this host the holder's process is gone; on
 * another host nothing here can tell, only that its heartbeat stopped (it may be alive, and
 * stopped or cut off).
 */
export function takeoverNote(row: LockRow, nowMs = Date.now(), host = hostName()): string {
  const age = `its heartbeat was ${Math.floor((nowMs - row.heartbeat_ms) / 1000)} s old`;
  let why: string;
  if (row.host !== host) why = age;
  else if (!processAlive(row.pid)) why = 'no longer running';
  else if (row.proc_start && processStart(row.pid) !== row.proc_start) why = `pid ${row.pid} is now another process`;
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
  readonly host = hostName();
  readonly pid = process.pid;
  readonly token = crypto.randomBytes(12).toString('hex');

  constructor(
    private readonly db: Db,
    private readonly file: string,
    /** The simulator's process timers (src/sim); the real ones otherwise. */
    private readonly timers: Timers = REAL_TIMERS,
  ) {}

  /**
   * Take the lock or throw (exit 4) naming the live holder. `also` runs in the same transaction,
   * after the lock is written (the apply's start and its record, through `tx`, the transaction's
   * handle); what it throws undoes the take.
   */
  async acquire(also?: (tx: Db, tookOverFrom: LockRow | undefined) => Promise<void>): Promise<{ tookOverFrom?: LockRow }> {
    return await this.db
      .transaction(async (tx) => {
        const row = await readLock(tx);
        if (row && row.token !== this.token && holderAlive(row, Date.now(), this.host)) {
          const age = Math.floor((Date.now() - row.heartbeat_ms) / 1000);
          const silent =
            age * 1000 > STALE_MS ? `; pid ${row.pid} is alive but has not written for ${age} s; if it is hung, stop it` : '';
          throw new DcmError(
            `another orchestrator holds ${this.file}: pid ${row.pid} on host ${row.host} since ${row.started_at}${silent}`,
            EXIT.locked,
          );
        }
        await writeLock(tx, { pid: this.pid, host: this.host, token: this.token, procStart: processStart(this.pid) });
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
    this.timer = this.timers.every(async () => {
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
