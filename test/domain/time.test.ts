/** Times are UTC, printed as dcmanager prints them: `YYYY-MM-DD HH:MM:SS.ffffff` (SPEC §2). */
import { expect, test } from '@jest/globals';
import { formatTimestamp, parseTimestamp } from '../../src/domain/time.js';

test('microseconds, zero-padded, UTC', () => {
  const micros = Date.UTC(2025, 0, 1, 10, 1, 0) * 1000 + 42;
  expect(formatTimestamp(micros)).toBe('2025-01-01 10:01:00.000042');
  expect(formatTimestamp(Date.UTC(2024, 11, 31, 23, 59, 59, 999) * 1000 + 999)).toBe('2024-12-31 23:59:59.999999');
});

test('parse is the inverse of format', () => {
  for (const t of ['2025-01-01 10:01:00.000000', '2025-06-30 00:00:00.123456', '1999-12-31 23:59:59.999999']) {
    expect(formatTimestamp(parseTimestamp(t))).toBe(t);
  }
});
