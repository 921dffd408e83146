/**
 * Maintenance windows, the pure decision: fixed instants in the past, the present and the future
 * of a window, in UTC and across the DST changes of Europe/Berlin and America/New_York. Nothing
 * here reads a clock or sleeps.
 */
import { describe, expect, test } from '@jest/globals';
import { checkTimeZone, isOpen, nextOpening, parseMaintenanceWindow } from '../../src/domain/maintenance.js';
import { UsageError } from '../../src/domain/errors.js';

const at = (iso: string) => new Date(iso);
const open = (w: string, tz: string, iso: string) => isOpen(parseMaintenanceWindow(w), tz, at(iso));
const next = (w: string, tz: string, iso: string) => nextOpening(parseMaintenanceWindow(w), tz, at(iso)).toISOString();

describe('parseMaintenanceWindow', () => {
  test('weekly, daily and several spans, normalised; days in any case', () => {
    expect(parseMaintenanceWindow('sat 22:00-SUN 6:00').text).toBe('Sat 22:00-Sun 06:00');
    expect(parseMaintenanceWindow(' 22:00 - 06:00 ').text).toBe('22:00-06:00');
    expect(parseMaintenanceWindow('Tue 01:00-Tue 02:00,Thu 01:00-Thu 02:00').text).toBe('Tue 01:00-Tue 02:00, Thu 01:00-Thu 02:00');
    // A daily span is one span per day of the week.
    expect(parseMaintenanceWindow('01:00-02:00').spans).toHaveLength(7);
  });

  test.each([
    ['', 'a span is empty'],
    ['Sat 22:00', 'is not a span FROM-TO'],
    ['Sat 22:00-Sun 06:00,', 'a span is empty'],
    ['Sat 25:00-Sun 06:00', 'not a time of day'],
    ['Sat 22:60-Sun 06:00', 'not a time of day'],
    ['Sam 22:00-Sun 06:00', "'Sam' is not a day"],
    ['Sat 22:00-06:00', 'mixes a weekly and a daily span'],
    ['22:00-22:00', 'starts and ends at the same time'],
    ['Sat 10pm-Sun 6am', 'is not a time HH:MM'],
  ])('%j is refused: %s', (text, why) => {
    expect(() => parseMaintenanceWindow(text)).toThrow(UsageError);
    expect(() => parseMaintenanceWindow(text)).toThrow(why);
    expect(() => parseMaintenanceWindow(text)).toThrow(`invalid --maintenance-window '${text}'`);
  });

  test('time zones are IANA names', () => {
    expect(checkTimeZone('Europe/Berlin')).toBe('Europe/Berlin');
    expect(checkTimeZone('UTC')).toBe('UTC');
    expect(() => checkTimeZone('Mars/Olympus')).toThrow("invalid --maintenance-tz 'Mars/Olympus'");
  });
});

describe('a weekly window in UTC (Tue 2026-12-01 is now; Sat 2026-12-05 is the night)', () => {
  const w = 'Sat 22:00-Sun 06:00';
  test('future: closed now, opens on Saturday at 22:00', () => {
    expect(open(w, 'UTC', '2026-12-01T21:16:00Z')).toBe(false);
    expect(next(w, 'UTC', '2026-12-01T21:16:00Z')).toBe('2026-12-05T22:00:00.000Z');
    expect(open(w, 'UTC', '2026-12-05T21:59:59Z')).toBe(false);
  });
  test('present: open from its start to just before its end, and its next opening is now', () => {
    expect(open(w, 'UTC', '2026-12-05T22:00:00Z')).toBe(true);
    expect(open(w, 'UTC', '2026-12-06T05:59:59Z')).toBe(true);
    expect(next(w, 'UTC', '2026-12-06T03:00:00Z')).toBe('2026-12-06T03:00:00.000Z');
  });
  test('past: closed after its end, opens again a week later', () => {
    expect(open(w, 'UTC', '2026-12-06T06:00:00Z')).toBe(false);
    expect(next(w, 'UTC', '2026-12-06T06:00:00Z')).toBe('2026-12-12T22:00:00.000Z');
  });
  test('a span over the week end (Sunday to Monday)', () => {
    expect(open('Sun 22:00-Mon 02:00', 'UTC', '2026-12-07T01:00:00Z')).toBe(true);
    expect(open('Sun 22:00-Mon 02:00', 'UTC', '2026-12-07T02:00:00Z')).toBe(false);
    expect(next('Sun 22:00-Mon 02:00', 'UTC', '2026-12-07T02:00:00Z')).toBe('2026-12-13T22:00:00.000Z');
  });
  test('several spans: the earliest next one', () => {
    const two = 'Thu 01:00-Thu 02:00, Tue 01:00-Tue 02:00';
    expect(next(two, 'UTC', '2026-12-01T03:00:00Z')).toBe('2026-12-03T01:00:00.000Z');
    expect(next(two, 'UTC', '2026-12-03T03:00:00Z')).toBe('2026-12-08T01:00:00.000Z');
  });
});

describe('a daily window', () => {
  test('crossing midnight: open late and early, closed at noon, opens in the evening', () => {
    expect(open('22:00-06:00', 'UTC', '2026-12-01T23:00:00Z')).toBe(true);
    expect(open('22:00-06:00', 'UTC', '2026-12-02T05:00:00Z')).toBe(true);
    expect(open('22:00-06:00', 'UTC', '2026-12-02T12:00:00Z')).toBe(false);
    expect(next('22:00-06:00', 'UTC', '2026-12-02T12:00:00Z')).toBe('2026-12-02T22:00:00.000Z');
  });
});

describe('Europe/Berlin, wall-clock time across DST', () => {
  const w = 'Sat 22:00-Sun 06:00';
  test('winter (UTC+1) and summer (UTC+2) open at different UTC hours', () => {
    expect(next(w, 'Europe/Berlin', '2026-12-01T12:00:00Z')).toBe('2026-12-05T21:00:00.000Z');
    expect(next(w, 'Europe/Berlin', '2026-07-01T12:00:00Z')).toBe('2026-07-04T20:00:00.000Z');
  });
  test('the night clocks go forward (29 March 2026): opens at 22:00 CET, ends at 06:00 CEST', () => {
    expect(next(w, 'Europe/Berlin', '2026-03-27T12:00:00Z')).toBe('2026-03-28T21:00:00.000Z');
    expect(open(w, 'Europe/Berlin', '2026-03-29T03:59:00Z')).toBe(true);
    expect(open(w, 'Europe/Berlin', '2026-03-29T04:00:00Z')).toBe(false);
  });
  test('a span starting in the skipped hour opens at the jump', () => {
    // 02:00 CET becomes 03:00 CEST at 01:00 UTC: no clock shows 02:30 that night.
    expect(open('02:30-03:30', 'Europe/Berlin', '2026-03-29T00:59:00Z')).toBe(false);
    expect(next('02:30-03:30', 'Europe/Berlin', '2026-03-29T00:30:00Z')).toBe('2026-03-29T01:00:00.000Z');
    expect(open('02:30-03:30', 'Europe/Berlin', '2026-03-29T01:30:00Z')).toBe(false);
  });
  test('the night clocks go back (25 October 2026): the repeated hour opens twice', () => {
    expect(next('02:30-03:30', 'Europe/Berlin', '2026-10-25T00:00:00Z')).toBe('2026-10-25T00:30:00.000Z');
    // 03:00 CEST becomes 02:00 CET at 01:00 UTC: 02:00..02:30 again, closed, then 02:30 again.
    expect(open('02:30-03:30', 'Europe/Berlin', '2026-10-25T01:15:00Z')).toBe(false);
    expect(next('02:30-03:30', 'Europe/Berlin', '2026-10-25T01:10:00Z')).toBe('2026-10-25T01:30:00.000Z');
    expect(open('02:30-03:30', 'Europe/Berlin', '2026-10-25T02:29:00Z')).toBe(true);
  });
});

describe('America/New_York across DST', () => {
  const w = 'Sat 22:00-Sun 06:00';
  test('spring forward (8 March 2026): opens 22:00 EST, ends 06:00 EDT; the next week opens an hour earlier in UTC', () => {
    expect(next(w, 'America/New_York', '2026-03-05T12:00:00Z')).toBe('2026-03-08T03:00:00.000Z');
    expect(open(w, 'America/New_York', '2026-03-08T09:59:00Z')).toBe(true);
    expect(open(w, 'America/New_York', '2026-03-08T10:00:00Z')).toBe(false);
    expect(next(w, 'America/New_York', '2026-03-08T10:00:00Z')).toBe('2026-03-15T02:00:00.000Z');
  });
  test('fall back (1 November 2026): a nine-hour night', () => {
    expect(next(w, 'America/New_York', '2026-10-29T12:00:00Z')).toBe('2026-11-01T02:00:00.000Z');
    expect(open(w, 'America/New_York', '2026-11-01T10:59:00Z')).toBe(true);
    expect(open(w, 'America/New_York', '2026-11-01T11:00:00Z')).toBe(false);
  });
});
