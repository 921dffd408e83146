/**
 * The simulator's time. One virtual clock (@sinonjs/fake-timers, installed over the process's
 * timers and Date for the length of a schedule) runs everything: the simulated sites, the
 * operator, and each simulated dcm process. Each process reaches it only through its own
 * `ProcessTimers` (the runtime's timers, src/orchestrator/runtime.ts), which the simulator can
 * kill (kill -9: nothing of the process runs again) or freeze (SIGSTOP: what falls due waits until
 * it is continued).
 */
import FakeTimers from '@sinonjs/fake-timers';
import { REAL_TIMERS, type Timer, type Timers } from '../platform/timers.js';
import { pgQueriesOut, pgQuiet } from '../platform/pg-client.js';

/** The epoch a schedule starts at (a fixed moment: a seed replays the same timestamps). */
export const SIM_EPOCH = Date.UTC(2026, 0, 5, 9, 0, 0);

export type VirtualClock = ReturnType<ReturnType<typeof FakeTimers.withGlobal>['install']>;

export function installClock(): VirtualClock {
  return FakeTimers.withGlobal(globalThis).install({
    now: SIM_EPOCH,
    toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'Date', 'performance'],
    shouldClearNativeTimers: true,
  });
}

/** The real event loop's next turn, taken before any virtual clock is installed over setImmediate. */
const realImmediate = setImmediate;

/**
 * Resolves once no query to a server is out, nor asked in what the answers set going: virtual
 * time may move on. A server answers in real time, and a clock moved meanwhile would make a
 * query take virtual time (a lease lapse while its heartbeat is on the wire).
 */
export async function answered(): Promise<void> {
  for (;;) {
    await pgQuiet();
    await new Promise<void>((r) => realImmediate(() => r()));
    if (pgQueriesOut() === 0) return;
  }
}

const NO_TIMER: Timer = { clear() {}, unref: () => NO_TIMER };

/** The timers of one simulated process. */
export class ProcessTimers implements Timers {
  private readonly set = new Set<Timer>();
  private held: (() => void)[] = [];
  dead = false;
  frozen = false;

  private wrap(fn: () => void | Promise<unknown>): () => void | Promise<unknown> {
    return () => {
      if (this.dead) return;
      if (this.frozen) this.held.push(() => void fn());
      else return fn();
    };
  }

  private track(t: Timer): Timer {
    this.set.add(t);
    const clear = t.clear.bind(t);
    return {
      clear: () => {
        clear();
        this.set.delete(t);
      },
      unref: () => {
        t.unref();
        return t;
      },
    };
  }

  after(fn: () => void, ms: number): Timer {
    return this.dead ? NO_TIMER : this.track(REAL_TIMERS.after(() => void this.wrap(fn)(), ms));
  }

  every(fn: () => void | Promise<unknown>, ms: number): Timer {
    return this.dead ? NO_TIMER : this.track(REAL_TIMERS.every(this.wrap(fn), ms));
  }

  soon(fn: () => void): void {
    if (!this.dead) REAL_TIMERS.soon(() => void this.wrap(fn)());
  }

  /** kill -9: nothing set here runs again. */
  kill(): void {
    this.dead = true;
    for (const t of this.set) t.clear();
    this.set.clear();
    this.held = [];
  }

  /** SIGSTOP: what falls due waits. */
  freeze(): void {
    this.frozen = true;
  }

  /** SIGCONT: what fell due runs, in the order it fell due. */
  thaw(): void {
    this.frozen = false;
    const held = this.held;
    this.held = [];
    for (const fn of held) this.soon(fn);
  }
}
