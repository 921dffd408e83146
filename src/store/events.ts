/** Queries of the strategy_event table: the strategy's event record, written beside the change it records. */
import type { Db } from './open.js';
import { sql } from './statements.js';
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
}

/**
 * Add an event to the strategy's record, in the caller's transaction. With no strategy (it was
 * deleted meanwhile) there is nothing to record it for, and nothing is written.
 */
export function recordEvent(db: Db, who: Actor, event: string, details = ''): void {
  sql(
    db,
    `INSERT INTO strategy_event (strategy_id, at, event, "user", host, pid, details)
     SELECT id, ?, ?, ?, ?, ?, ? FROM strategy WHERE id = 1`,
  ).run(now(), event, who.user, who.host, who.pid, visible(details, EVENT_DETAILS_MAX));
}

/** The record in the order it was written. */
export function listEvents(db: Db): EventRow[] {
  return sql(db, 'SELECT at, event, "user", host, pid, details FROM strategy_event ORDER BY id').all() as EventRow[];
}
