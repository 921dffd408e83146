/**
 * The timer helper under jest's fake clock, which treats a delay past 2^31-1 ms as Node does
 * (it fires after 1 ms): the helper's timers fire once the whole delay has passed, never before.
 */
import { afterEach, beforeEach, describe, expect, jest, test } from '@jest/globals';
import { MAX_TIMER_MS, setLongInterval, setLongTimeout, sleep } from '../../src/platform/timers.js';

const DAY = 24 * 3600 * 1000;

describe('long timers', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  test('a bare setTimeout past the limit fires at once; the helper waits the whole delay', () => {
    const bare = jest.fn();
    const long = jest.fn();
    const warn = process.emitWarning;
    process.emitWarning = () => {}; // the overflow warning the bare timer is shown to cause
    try {
      setTimeout(bare, 30 * DAY);
    } finally {
      process.emitWarning = warn;
    }
    setLongTimeout(long, 30 * DAY);
    jest.advanceTimersByTime(10);
    expect(bare).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(MAX_TIMER_MS);
    expect(long).not.toHaveBeenCalled();
    jest.advanceTimersByTime(30 * DAY - MAX_TIMER_MS - 11);
    expect(long).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(long).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(100 * DAY);
    expect(long).toHaveBeenCalledTimes(1);
  });

  test('clear stops a long timeout between its steps', () => {
    const fn = jest.fn();
    const t = setLongTimeout(fn, 60 * DAY);
    jest.advanceTimersByTime(MAX_TIMER_MS + 5);
    t.clear();
    jest.advanceTimersByTime(100 * DAY);
    expect(fn).not.toHaveBeenCalled();
  });

  test('short, zero, negative and NaN delays', () => {
    const fn = jest.fn();
    setLongTimeout(fn, 5);
    setLongTimeout(fn, 0);
    setLongTimeout(fn, -3);
    setLongTimeout(fn, Number.NaN);
    jest.advanceTimersByTime(4);
    expect(fn).toHaveBeenCalledTimes(3);
    jest.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledTimes(4);
  });

  test('an interval of 600h fires every 600h, and stops when cleared from its own call', () => {
    let calls = 0;
    const every = 600 * 3600 * 1000;
    const t = setLongInterval(() => {
      calls++;
      if (calls === 3) t.clear();
    }, every);
    jest.advanceTimersByTime(every - 1);
    expect(calls).toBe(0);
    jest.advanceTimersByTime(1);
    expect(calls).toBe(1);
    jest.advanceTimersByTime(every * 10);
    expect(calls).toBe(3);
  });

  test('sleep resolves after the delay', async () => {
    let done = false;
    void sleep(40 * DAY).then(() => (done = true));
    await jest.advanceTimersByTimeAsync(39 * DAY);
    expect(done).toBe(false);
    await jest.advanceTimersByTimeAsync(DAY);
    expect(done).toBe(true);
  });
});
