/**
 * The simulated hosts and their processes, and the runtime each process is given (platform/runtime.ts):
 * the only way a simulated dcm process, its launcher or the operator reaches time, timers, other
 * processes and signals.
 *
 * A host has its own wall clock (an offset from the true time, which NTP or an operator may step),
 * and a table of its processes. A process may be frozen (SIGSTOP, or its host paused: what falls
 * due waits until it is continued), or killed (kill -9, or its host lost: nothing of it runs again).
 * Monotonic time is the true time for every process (it never steps); the database server's clock
 * is the true time too.
 */
import type { Clock } from '../platform/clock.js';
import type { ProcessRuntime, ProcTable, StopSignal } from '../platform/runtime.js';
import type { Timer, Timers } from '../platform/timers.js';
import { SIM_EPOCH, type Event, type Loop } from './loop.js';

/** The first pid the simulator hands out (each process gets the next). */
const FIRST_PID = 4_190_000;

export class SimHost {
  /** What this host's wall clock reads ahead of the true time (ms; negative: behind). */
  offsetMs = 0;
  readonly procs = new Map<number, SimProcess>();
  /** Paused (a VM paused, SIGSTOP to everything): its processes' timers wait. */
  frozen = false;
  /** Cut off from the database: its processes' statements wait until it is back (sim-db.ts). */
  cut = false;
  /** Lost with every process on it: it never comes back. */
  lost = false;
  readonly clock: Clock;

  constructor(
    readonly name: string,
    readonly world: { loop: Loop; nextPid(): number; hit(kind: string): void },
  ) {
    const loop = world.loop;
    this.clock = {
      wall: () => SIM_EPOCH + loop.now + this.offsetMs,
      mono: () => loop.now,
      server: () => SIM_EPOCH + loop.now,
    };
  }

  /** A new process on this host. */
  spawn(name: string): SimProcess {
    const p = new SimProcess(this.world.nextPid(), name, this);
    this.procs.set(p.pid, p);
    return p;
  }

  /** The process table as a process of this host sees it. */
  table(self: number): ProcTable {
    return {
      self,
      alive: (pid) => {
        const p = this.procs.get(pid);
        return p !== undefined && !p.dead;
      },
      startOf: (pid) => this.procs.get(pid)?.start ?? null,
      kill: (pid, signal) => {
        const p = this.procs.get(Math.abs(pid));
        if (!p || p.dead) return false;
        if (signal === 'SIGKILL') p.kill();
        else if (signal === 'SIGSTOP') p.freeze();
        else if (signal === 'SIGCONT') p.thaw();
        else if (signal === 'SIGINT' || signal === 'SIGTERM') p.signal(signal);
        return true;
      },
    };
  }

  /** Paused: every process of the host waits. */
  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const p of this.procs.values()) p.wake();
  }

  /** Lost: every process of the host is gone for good. */
  lose(): void {
    this.lost = true;
    for (const p of this.procs.values()) p.kill();
  }
}

export function firstPid(): () => number {
  let n = FIRST_PID;
  return () => n++;
}

export class SimProcess {
  dead = false;
  private stopped = false;
  /** `<boot>:<start>`: with the pid it names this process. */
  readonly start: string;
  private readonly events = new Set<Event>();
  private held: (() => void)[] = [];
  private readonly listeners = new Set<(s: StopSignal) => void>();
  /** Called once, as the process is killed (its connections closed by the world). */
  readonly onKill: (() => void)[] = [];
  readonly timers: Timers;

  constructor(
    readonly pid: number,
    readonly name: string,
    readonly host: SimHost,
  ) {
    this.start = `sim-boot:${host.world.loop.now}:${pid}`;
    this.timers = {
      after: (fn, ms) => this.after(fn, ms),
      every: (fn, ms) => this.every(fn, ms),
      soon: (fn) => void this.after(fn, 0),
    };
  }

  get frozen(): boolean {
    return this.stopped || this.host.frozen;
  }

  /** The runtime this process is given. */
  runtime(): ProcessRuntime {
    return {
      clock: this.host.clock,
      timers: this.timers,
      procs: this.host.table(this.pid),
      signals: {
        listen: (handler) => {
          this.listeners.add(handler);
          return () => this.listeners.delete(handler);
        },
      },
      host: this.host.name,
    };
  }

  /** `fn` as this process runs it: never once dead, later if frozen. */
  run(fn: () => void): void {
    if (this.dead) return;
    if (this.frozen) this.held.push(fn);
    else fn();
  }

  private after(fn: () => void, ms: number): Timer {
    if (this.dead) return NO_TIMER;
    const loop = this.host.world.loop;
    const e = loop.after(ms, () => {
      this.events.delete(e);
      this.run(fn);
    });
    this.events.add(e);
    const t: Timer = {
      clear: () => {
        loop.cancel(e);
        this.events.delete(e);
      },
      unref: () => t,
    };
    return t;
  }

  /** As platform/timers.ts setLongInterval: never twice at once (a tick while one runs is skipped). */
  private every(fn: () => void | Promise<unknown>, ms: number): Timer {
    let going = false;
    let current: Timer = NO_TIMER;
    const next = () => {
      current = this.after(() => {
        next();
        if (going) return;
        const out = fn();
        if (out instanceof Promise) {
          going = true;
          out.finally(() => (going = false)).catch(() => {});
        }
      }, ms);
    };
    next();
    const t: Timer = {
      clear: () => current.clear(),
      unref: () => t,
    };
    return t;
  }

  /** A signal, as the process's handlers hear it (none: the default action, an exit). */
  signal(s: StopSignal): void {
    this.after(() => {
      for (const l of [...this.listeners]) l(s);
    }, 0);
  }

  /** kill -9: nothing of it runs again. */
  kill(): void {
    if (this.dead) return;
    this.dead = true;
    const loop = this.host.world.loop;
    for (const e of this.events) loop.cancel(e);
    this.events.clear();
    this.held = [];
    this.listeners.clear();
    for (const f of this.onKill.splice(0)) f();
  }

  /** SIGSTOP. */
  freeze(): void {
    this.stopped = true;
  }

  /** SIGCONT. */
  thaw(): void {
    this.stopped = false;
    this.wake();
  }

  /** What fell due while frozen runs now, in the order it fell due. */
  wake(): void {
    if (this.frozen || this.dead) return;
    const held = this.held;
    this.held = [];
    for (const fn of held) this.after(fn, 0);
  }
}

const NO_TIMER: Timer = { clear() {}, unref: () => NO_TIMER };
