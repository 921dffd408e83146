/**
 * The store's clock: UTC microseconds, strictly increasing within a process, so that the order of
 * history rows by time matches the order in which things happened even within one millisecond.
 */
import { formatTimestamp } from '../domain/time.js';

let last = 0;

export function nowMicros(): number {
  const t = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  last = t > last ? t : last + 1;
  return last;
}

export function now(): string {
  return formatTimestamp(nowMicros());
}

/** A time as the store writes it (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC) in epoch ms. */
export function parseTime(text: string): number {
  return Date.parse(`${text.replace(' ', 'T').slice(0, 23)}Z`);
}

/**
 * An epoch-ms time as the store writes times; `parseTime` reads back exactly the same ms, so a
 * stored deadline compares equal to the one it was written from (timeIn's clock is not Date.now's).
 */
export function timeAt(epochMs: number): string {
  return formatTimestamp(Math.floor(epochMs) * 1000);
}

/** `ms` from now, as the store writes times. */
export function timeIn(ms: number): string {
  return formatTimestamp(Math.floor((performance.timeOrigin + performance.now() + ms) * 1000));
}
