/** Queries of the strategy_event table: the strategy's event record, written beside the change it records. */
import type { Db } from './open.js';
import { Params, sql } from './statements.js';
import { now } from './clock.js';
import type { Actor } from '../platform/who.js';
import { visible } from '../domain/outside-text.js';

/**
 * An event's details are dcm's words around outside text (a check's last line, a reason): kept
 * escaped (domain/outside-text.ts), and cut well past anything dcm writes itself.
 */
const EVENT_DETAILS_MAX = 4000;

export interface EventRow {
  at: string;
  event: string;
  user: string;
  host: string;
  pid: number;
  details: string;
  /** The operator's `--reason`, null when none was given (or the event is not an operator's). */
  reason: string | null;
}

/**
 * Add an event to the strategy's record, in the caller's transaction. With no strategy (it was
 * deleted meanwhile) there is nothing to record it for, and nothing is written.
 */
export async function recordEvent(db: Db, who: Actor, event: string, details = '', reason: string | null = null): Promise<void> {
  await sql(
    db,
    `INSERT INTO strategy_event (strategy_id, at, event, "user", host, pid, details, reason)
     SELECT id, $1, $2, $3, $4, $5, $6, $7 FROM strategy WHERE id = 1`,
  ).run(now(db), event, who.user, who.host, who.pid, visible(details, EVENT_DETAILS_MAX), reason);
}

/** The record in the order it was written. */
export async function listEvents(db: Db): Promise<EventRow[]> {
  return (await sql(db, 'SELECT at, event, "user", host, pid, details, reason FROM strategy_event ORDER BY id').all()) as EventRow[];
}

/** The latest event of these names (the operator's last action), or undefined. */
export async function lastEventOf(db: Db, events: readonly string[]): Promise<EventRow | undefined> {
  const p = new Params();
  return (await sql(
    db,
    `SELECT at, event, "user", host, pid, details, reason FROM strategy_event WHERE event IN (${p.list(events)}) ORDER BY id DESC LIMIT 1`,
  ).get(...p.values)) as EventRow | undefined;
}

/** The last event's id (0 without any): where a reader of what comes next starts. */
export async function lastEventId(db: Db): Promise<number> {
  return Number(await sql(db, 'SELECT coalesce(max(id), 0) FROM strategy_event').pluck().get() ?? 0);
}

/** The events recorded after `id`, in order, with their ids (orchestrator/notify.ts). */
export async function eventsAfter(db: Db, id: number): Promise<(EventRow & { id: number })[]> {
  return (await sql(db, 'SELECT id, at, event, "user", host, pid, details, reason FROM strategy_event WHERE id > $1 ORDER BY id').all(id)) as (EventRow & { id: number })[];
}

/**
 * Where a reader of what comes next starts, for `who`: after the last event anyone else recorded,
 * so that what `who` recorded as it started (a lock or a worker taken over) is read too.
 */
export async function lastEventIdNotBy(db: Db, who: { pid: number; host: string }): Promise<number> {
  return Number(await sql(db, 'SELECT coalesce(max(id), 0) FROM strategy_event WHERE NOT (pid = $1 AND host = $2)').pluck().get(who.pid, who.host) ?? 0);
}

/** Whether an event of this name and details is in the record already (a notice told once). */
export async function hasEvent(db: Db, event: string, details: string): Promise<boolean> {
  return (await sql(db, 'SELECT 1 FROM strategy_event WHERE event = $1 AND details = $2').get(event, details)) !== undefined;
}
