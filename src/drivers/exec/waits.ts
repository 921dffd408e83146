/**
 * How long the exec driver waits for what it cannot ask directly: a run's taker that said nothing,
 * the launcher's own stop of a run, and a process woken from a freeze (its timers fired late).
 */

/** Looks (about 1.5 s of them) after which a run taken by a taker that is gone and said nothing runs again. */
export const UNDECIDED_LOOKS = 12;

/**
 * How long past its timeout and kill grace the launcher lets a run go before it stops the run
 * itself: the worker stops it first while it lives; the launcher's stop is for a worker frozen or
 * gone (several hosts: a taker on another host waits that long at most).
 */
export const BACKSTOP_MS = 5_000;

/** A timer this late was held up by more than a busy event loop: the process was stopped. */
export const LATE_TIMER_MS = 1_000;
/** How long a run's timeout, fired late, waits for an end its wrapper, woken too, may have to write. */
export const WOKEN_GRACE_MS = 2_000;
