/**
 * The apply lock: which process runs the orchestrator on this file (pid, host, the process's start
 * time, since when, heartbeat) and its fencing token. Every write of the holder names the token
 * (graphile-worker's `WHERE … AND locked_by = $holder`): a process that lost the lock changes
 * nothing and learns so.
 */
import type { Db } from './open.js';
import { sql } from './statements.js';
import { now } from './clock.js';

export interface LockRow {
  pid: number;
  host: string;
  started_at: string;
  heartbeat_at: string;
  heartbeat_ms: number;
  token: string;
  /** `<boot id>:<start time in clock ticks>` of the holder's process, when known. */
  proc_start: string | null;
}

export interface LockHolder {
  pid: number;
  host: string;
  token: string;
  procStart: string | null;
}

/** The holder of the lock, if it is held (a released lock keeps its last holder, with no token). */
export async function readLock(db: Db): Promise<LockRow | undefined> {
  return (await sql(db, `SELECT pid, host, started_at, heartbeat_at, heartbeat_ms, token, proc_start FROM apply_lock WHERE id = 1 AND token != ''`)
    .get()) as LockRow | undefined;
}

/** Who held the lock last, held or released: a displaced orchestrator names it when it stops. */
export async function lastHolder(db: Db): Promise<LockRow | undefined> {
  return (await sql(db, 'SELECT pid, host, started_at, heartbeat_at, heartbeat_ms, token, proc_start FROM apply_lock WHERE id = 1').get()) as
    | LockRow
    | undefined;
}

export async function writeLock(db: Db, h: LockHolder): Promise<void> {
  const at = now(db);
  await sql(
    db,
    `INSERT INTO apply_lock (id, pid, host, started_at, heartbeat_at, heartbeat_ms, token, proc_start) VALUES (1, $1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, host = excluded.host, started_at = excluded.started_at,
       heartbeat_at = excluded.heartbeat_at, heartbeat_ms = excluded.heartbeat_ms, token = excluded.token,
       proc_start = excluded.proc_start`,
  ).run(h.pid, h.host, at, at, db.clock.wall(), h.token, h.procStart);
}

/** Refresh the heartbeat; false when the lock is no longer this token's (someone took it over). */
export async function beat(db: Db, token: string): Promise<boolean> {
  return (
    (await sql(db, 'UPDATE apply_lock SET heartbeat_at = $1, heartbeat_ms = $2 WHERE id = 1 AND token = $3').run(now(db), db.clock.wall(), token))
      .changes === 1
  );
}

/** True while `token` holds the lock; read inside the writer's transaction, it fences the write. */
export async function holdsLock(db: Db, token: string): Promise<boolean> {
  return (await sql(db, 'SELECT 1 FROM apply_lock WHERE id = 1 AND token = $1').pluck().get(token)) !== undefined;
}

/**
 * Let go of the lock, if `token` still holds it. The row stays, without a token, so that an
 * orchestrator displaced earlier can still say who took its place.
 */
export async function releaseLock(db: Db, token: string): Promise<void> {
  await sql(db, `UPDATE apply_lock SET token = '' WHERE id = 1 AND token = $1`).run(token);
}

