/** The apply lock: which process runs the orchestrator on this file (pid, host, since, heartbeat). */
import type { Db } from './open.js';
import { sql } from './statements.js';
import { now } from './clock.js';

export interface LockRow {
  pid: number;
  host: string;
  started_at: string;
  heartbeat_at: string;
  heartbeat_ms: number;
}

export function readLock(db: Db): LockRow | undefined {
  return sql(db, 'SELECT pid, host, started_at, heartbeat_at, heartbeat_ms FROM apply_lock WHERE id = 1').get() as
    | LockRow
    | undefined;
}

export function writeLock(db: Db, pid: number, host: string): void {
  const at = now();
  sql(
    db,
    `INSERT INTO apply_lock (id, pid, host, started_at, heartbeat_at, heartbeat_ms) VALUES (1, ?, ?, ?, ?, ?)
     ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, host = excluded.host, started_at = excluded.started_at,
       heartbeat_at = excluded.heartbeat_at, heartbeat_ms = excluded.heartbeat_ms`,
  ).run(pid, host, at, at, Date.now());
}

/** Refresh the heartbeat; false when the lock is no longer ours (someone took it over). */
export function beat(db: Db, pid: number, host: string): boolean {
  return (
    sql(db, 'UPDATE apply_lock SET heartbeat_at = ?, heartbeat_ms = ? WHERE id = 1 AND pid = ? AND host = ?')
      .run(now(), Date.now(), pid, host).changes === 1
  );
}

export function deleteLock(db: Db, pid: number, host: string): void {
  sql(db, 'DELETE FROM apply_lock WHERE id = 1 AND pid = ? AND host = ?').run(pid, host);
}
