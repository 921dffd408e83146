/** The store's clock: a deadline written with timeAt reads back as the same ms (a restarted gate compares them). */
import { expect, test } from '@jest/globals';
import { parseTime, timeAt } from '../../src/store/clock.js';

test('timeAt and parseTime round-trip an epoch-ms deadline exactly', () => {
  const base = Date.UTC(2026, 11, 2, 0, 0, 0, 0);
  for (const ms of [base, base + 1, base + 999, base + 3_000, base + 86_399_999]) {
    expect(parseTime(timeAt(ms))).toBe(ms);
  }
  expect(timeAt(base + 1)).toBe('2026-12-02 00:00:00.001000');
});
