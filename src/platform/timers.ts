/**
 * Timers for delays a user gives (run timeouts, backoff, intervals): Node's setTimeout takes at
 * most 2^31-1 ms (24.8 days) and fires a longer delay after 1 ms, so a longer one is waited out in
 * pieces.
 */
const MAX_TIMER_MS = 2_147_483_647;

export interface LongTimer {
  clear(): void;
}

/** `fn` after `ms`, however long; `clear()` cancels it. */
export function longTimeout(fn: () => void, ms: number): LongTimer {
  let handle: NodeJS.Timeout;
  const end = performance.now() + ms;
  const arm = () => {
    const left = end - performance.now();
    handle = setTimeout(left > MAX_TIMER_MS ? arm : fn, Math.max(0, Math.min(left, MAX_TIMER_MS)));
  };
  arm();
  return { clear: () => clearTimeout(handle) };
}
