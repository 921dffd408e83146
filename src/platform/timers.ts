/**
 * Every delay dcm sets goes through here. Node's timers take at most 2^31-1 ms (about 24.8 days);
 * a longer delay fires after 1 ms with a TimeoutOverflowWarning, so a `timeout: 720h` would end
 * every run at once. These timers wait in steps no longer than that, and fire once the whole
 * delay has passed. A NaN or negative delay counts as 0, as Node counts it.
 */

/** setTimeout's longest delay. */
export const MAX_TIMER_MS = 2_147_483_647;

export interface Timer {
  /** Cancel it; calling again, or after it fired, does nothing. */
  clear(): void;
  /** Let the process exit while only this timer is pending (as `Timeout.unref`). */
  unref(): Timer;
}

/** Call `fn` once, after `ms`. */
export function setLongTimeout(fn: () => void, ms: number): Timer {
  let left = Number.isFinite(ms) && ms > 0 ? ms : ms === Infinity ? Infinity : 0;
  let handle: NodeJS.Timeout | null = null;
  let refed = true;
  const arm = () => {
    const step = Math.min(left, MAX_TIMER_MS);
    left -= step;
    handle = setTimeout(() => {
      if (left > 0) arm();
      else {
        handle = null;
        fn();
      }
    }, step);
    if (!refed) handle.unref();
  };
  arm();
  const timer: Timer = {
    clear() {
      if (handle) clearTimeout(handle);
      handle = null;
    },
    unref() {
      refed = false;
      handle?.unref();
      return timer;
    },
  };
  return timer;
}

/**
 * Call `fn` every `ms` until cleared; the first call after `ms`. An `fn` that returns a promise is
 * not called again before it settles (a tick meanwhile is skipped): a heartbeat or a poll that waits
 * for the database never runs twice at once.
 */
export function setLongInterval(fn: () => void | Promise<unknown>, ms: number): Timer {
  let current: Timer;
  let refed = true;
  let cleared = false;
  let going = false;
  const next = () => {
    current = setLongTimeout(() => {
      // Re-armed before the call: an `fn` that clears the interval stops it for good.
      next();
      if (going) return;
      const out = fn();
      if (out instanceof Promise) {
        going = true;
        out.finally(() => (going = false)).catch(() => {});
      }
    }, ms);
    if (!refed) current.unref();
  };
  next();
  const timer: Timer = {
    clear() {
      cleared = true;
      current.clear();
    },
    unref() {
      refed = false;
      if (!cleared) current.unref();
      return timer;
    },
  };
  return timer;
}

/** Resolve after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise<void>((resolve) => setLongTimeout(resolve, ms));
}

/**
 * The timers a part of the orchestrator sets, as one value: the real ones in an apply, and in the
 * simulator (src/sim) a set it can stop at once (a killed worker) or hold (a frozen one), so the
 * same code runs on both. Every delay of the orchestrator's parts goes through one of these.
 */
export interface Timers {
  /** `fn` once, after `ms` (setLongTimeout). */
  after(fn: () => void, ms: number): Timer;
  /** `fn` every `ms` until cleared, never twice at once (setLongInterval). */
  every(fn: () => void | Promise<unknown>, ms: number): Timer;
  /** `fn` on the next turn of the event loop, after what is queued now (setImmediate). */
  soon(fn: () => void): void;
}

export const REAL_TIMERS: Timers = {
  after: setLongTimeout,
  every: setLongInterval,
  soon: (fn) => void setImmediate(fn),
};

/** Resolve after `ms` on `timers`. */
export function sleepOn(timers: Timers, ms: number): Promise<void> {
  return new Promise<void>((resolve) => timers.after(resolve, ms));
}
