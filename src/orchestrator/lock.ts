/**
 * One orchestrator per file (SPEC §6). The lock row names the holder; a holder is alive while its
 * heartbeat is fresh and, on this host, its pid exists. A dead holder's lock is taken over.
 */
import os from 'node:os';
import { DcmError, EXIT } from '../domain/errors.js';
import type { Db } from '../store/open.js';
import { beat, deleteLock, readLock, writeLock, type LockRow } from '../store/lock.js';

export const HEARTBEAT_MS = 5_000;
export const STALE_MS = 30_000;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function holderAlive(row: LockRow, nowMs = Date.now()): boolean {
  if (nowMs - row.heartbeat_ms > STALE_MS) return false;
  if (row.host === os.hostname()) return pidAlive(row.pid);
  return true;
}

export class ApplyLock {
  private timer: NodeJS.Timeout | null = null;
  private readonly host = os.hostname();
  private readonly pid = process.pid;

  constructor(
    private readonly db: Db,
    private readonly file: string,
  ) {}

  /** Take the lock or throw (exit 4) naming the live holder. */
  acquire(): { tookOverFrom?: LockRow } {
    return this.db
      .transaction(() => {
        const row = readLock(this.db);
        if (row && holderAlive(row) && !(row.pid === this.pid && row.host === this.host)) {
          throw new DcmError(
            `another orchestrator holds ${this.file}: pid ${row.pid} on host ${row.host} since ${row.started_at}`,
            EXIT.locked,
          );
        }
        writeLock(this.db, this.pid, this.host);
        return row ? { tookOverFrom: row } : {};
      })
      .immediate();
  }

  /** Keep the heartbeat fresh; `onLost` runs if another process took the lock over. */
  startHeartbeat(onLost: () => void): void {
    this.timer = setInterval(() => {
      if (!beat(this.db, this.pid, this.host)) onLost();
    }, HEARTBEAT_MS);
  }

  release(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.db.open) deleteLock(this.db, this.pid, this.host);
  }
}
