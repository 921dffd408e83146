/**
 * The store's clock: UTC microseconds from the wall clock of the process that writes (its
 * connection's, `db.clock`: platform/runtime.ts), strictly increasing for that clock, so that the
 * order of history rows by time matches the order in which things happened even within one
 * millisecond, or across a step of the clock back.
 */
import { formatTimestamp } from '../domain/time.js';
import type { Clock } from '../platform/clock.js';
import type { Db } from '../platform/db.js';

const last = new WeakMap<Clock, number>();

export function nowMicros(clock: Clock): number {
  const t = Math.floor(clock.wall() * 1000);
  const before = last.get(clock) ?? 0;
  const at = t > before ? t : before + 1;
  last.set(clock, at);
  return at;
}

/** Now, as `db`'s holder's clock reads it and the store writes times. */
export function now(db: Db): string {
  return formatTimestamp(nowMicros(db.clock));
}

/** A time as the store writes it (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC) in epoch ms. */
export function parseTime(text: string): number {
  return Date.parse(`${text.replace(' ', 'T').slice(0, 23)}Z`);
}

/**
 * An epoch-ms time as the store writes times; `parseTime` reads back exactly the same ms, so a
 * stored deadline compares equal to the one it was written from.
 */
export function timeAt(epochMs: number): string {
  return formatTimestamp(Math.floor(epochMs) * 1000);
}

/** `ms` from now on `clock`, as the store writes times. */
export function timeIn(clock: Clock, ms: number): string {
  return timeAt(clock.wall() + ms);
}
