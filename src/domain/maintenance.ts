/**
 * Maintenance windows of a subcloud group (`subcloud-group update --maintenance-window`), the pure
 * part: what the text means, whether a window is open at a given instant, and when it next opens.
 * No clock: the instant is always an argument, so a test (or the orchestrator's injected clock)
 * can ask about Saturday night on a Tuesday.
 *
 * A window is read in wall-clock time of its IANA zone: "Sat 22:00-Sun 06:00" in Europe/Berlin is
 * open whenever a Berlin clock on the wall shows a time in that span, across DST changes (on the
 * night clocks go forward, a span starting in the skipped hour opens when the clock jumps past it).
 */
import { UsageError } from './errors.js';

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
const DAY_MIN = 24 * 60;
const WEEK_MIN = 7 * DAY_MIN;
const MINUTE_MS = 60_000;

/** One span, in minutes from Monday 00:00 local time: open from `start` (included) to `end` (excluded), wrapping the week end when end < start. */
export interface WeeklySpan {
  start: number;
  end: number;
}

export interface MaintenanceWindow {
  /** Daily spans expanded to one per day of the week: the decision only knows weekly ones. */
  spans: WeeklySpan[];
  /** As stored and shown: each span normalised ("Sat 22:00-Sun 06:00", "22:00-06:00"), comma-separated. */
  text: string;
}

export const WINDOW_USAGE = 'give "DAY HH:MM-DAY HH:MM" (days Mon..Sun) or "HH:MM-HH:MM", several separated by commas, or none';

function bad(text: string, why: string): never {
  throw new UsageError(`invalid --maintenance-window '${text}': ${why}; ${WINDOW_USAGE}`);
}

function clock(whole: string, t: string): number {
  const m = /^(\d{1,2}):(\d{2})$/.exec(t);
  if (!m) bad(whole, `'${t}' is not a time HH:MM`);
  const h = Number(m[1]);
  const min = Number(m[2]);
  if (h > 23 || min > 59) bad(whole, `'${t}' is not a time of day (00:00..23:59)`);
  return h * 60 + min;
}

function day(whole: string, d: string): number {
  const i = DAYS.findIndex((x) => x.toLowerCase() === d.toLowerCase());
  if (i < 0) bad(whole, `'${d}' is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)`);
  return i;
}

const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
const weekText = (m: number) => `${DAYS[Math.floor(m / DAY_MIN)]} ${hhmm(m % DAY_MIN)}`;

/** Parse a window's text; anything else is a usage error naming the part that is wrong. */
export function parseMaintenanceWindow(text: string): MaintenanceWindow {
  const parts = text.split(',').map((p) => p.trim());
  if (text.trim() === '' || parts.some((p) => p === '')) bad(text, 'a span is empty');
  const spans: WeeklySpan[] = [];
  const texts: string[] = [];
  for (const part of parts) {
    const ends = part.split('-').map((e) => e.trim());
    if (ends.length !== 2) bad(text, `'${part}' is not a span FROM-TO`);
    const [a, b] = ends.map((e) => e.split(/\s+/));
    if (a.length === 1 && b.length === 1) {
      const start = clock(text, a[0]);
      const end = clock(text, b[0]);
      if (start === end) bad(text, `'${part}' starts and ends at the same time`);
      // A daily span is the same span on every day; one crossing midnight ends the next day.
      for (let d = 0; d < 7; d++) spans.push({ start: d * DAY_MIN + start, end: ((d + (end < start ? 1 : 0)) % 7) * DAY_MIN + end });
      texts.push(`${hhmm(start)}-${hhmm(end)}`);
    } else if (a.length === 2 && b.length === 2) {
      const start = day(text, a[0]) * DAY_MIN + clock(text, a[1]);
      const end = day(text, b[0]) * DAY_MIN + clock(text, b[1]);
      if (start === end) bad(text, `'${part}' starts and ends at the same time`);
      spans.push({ start, end });
      texts.push(`${weekText(start)}-${weekText(end)}`);
    } else {
      bad(text, `'${part}' mixes a weekly and a daily span (give a day on both sides or on neither)`);
    }
  }
  return { spans, text: texts.join(', ') };
}

/** The zone's canonical name, or a usage error: Intl.DateTimeFormat knows the IANA zones. */
export function checkTimeZone(tz: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    throw new UsageError(`invalid --maintenance-tz '${tz}': not an IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)`);
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** Minutes from Monday 00:00 on the zone's wall clock at `ms`. */
function minuteOfWeek(tz: string, ms: number): number {
  let f = formats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formats.set(tz, f);
  }
  let wd = 0;
  let h = 0;
  let m = 0;
  for (const p of f.formatToParts(ms)) {
    if (p.type === 'weekday') wd = DAYS.indexOf(p.value as (typeof DAYS)[number]);
    else if (p.type === 'hour') h = Number(p.value) % 24;
    else if (p.type === 'minute') m = Number(p.value);
  }
  return wd * DAY_MIN + h * 60 + m;
}

function inSpan(s: WeeklySpan, m: number): boolean {
  return s.start < s.end ? m >= s.start && m < s.end : m >= s.start || m < s.end;
}

/** Whether the window is open at `date` in zone `tz`. */
export function isOpen(window: MaintenanceWindow, tz: string, date: Date): boolean {
  const m = minuteOfWeek(tz, date.getTime());
  return window.spans.some((s) => inSpan(s, m));
}

/**
 * When the window next opens, at or after `date` (`date` itself when it is open). Each span's
 * start is reached by counting wall-clock minutes; a DST change between now and then moves the
 * real instant by up to its shift (a start in the skipped hour opens at the jump), so the first
 * open minute is looked for from three hours before that count on.
 */
export function nextOpening(window: MaintenanceWindow, tz: string, date: Date): Date {
  const at = date.getTime();
  if (isOpen(window, tz, date)) return new Date(at);
  const base = Math.floor(at / MINUTE_MS) * MINUTE_MS;
  const m0 = minuteOfWeek(tz, base);
  const open = (ms: number) => {
    const m = minuteOfWeek(tz, ms);
    return window.spans.some((s) => inSpan(s, m));
  };
  let best = Infinity;
  for (const s of window.spans) {
    const delta = (((s.start - m0) % WEEK_MIN) + WEEK_MIN) % WEEK_MIN || WEEK_MIN;
    let c = Math.max(base + MINUTE_MS, base + (delta - SHIFT_MIN) * MINUTE_MS);
    if (c >= best) continue;
    for (let i = 0; i < 2 * SHIFT_MIN && c < best && !open(c); i++) c += MINUTE_MS;
    if (c < best && open(c)) best = c;
  }
  return new Date(best);
}

/** More than any zone moves its clocks at once (two hours, Antarctica/Troll). */
const SHIFT_MIN = 180;

/** `Sat 22:00-Sun 06:00 (Europe/Berlin)`: a window as the views say it. */
export function windowLabel(text: string, tz: string | null): string {
  return `${text} (${tz ?? 'UTC'})`;
}
