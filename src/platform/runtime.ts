/**
 * What a dcm process runs on, as one value: its clocks, its timers, the table of processes it can
 * see on its host, and the signals it receives. The apply service (commands/apply-service.ts),
 * the orchestrator, the apply lock, the workers' lease and the store reach time and processes only
 * through a runtime (test/runtime-lint.test.ts reads their sources for any other way), so that the
 * simulator (src/sim) can give each simulated process its own: a clock that an operator or NTP may
 * step, timers it can freeze (SIGSTOP) or end (kill -9), a process table of its own host, and
 * signals it sends itself. Nothing replaces a global.
 *
 * `realRuntime()` is this process's: Date and performance, Node's timers, /proc and kill(2),
 * SIGINT and SIGTERM.
 */
import os from 'node:os';
import { REAL_TIMERS, type Timers } from './timers.js';
import { bootId, processAlive, readStat } from './proc.js';
import { hostName } from './who.js';
import { REAL_CLOCK, type Clock } from './clock.js';

export { REAL_CLOCK, type Clock };

/** The processes of this host, as the lock and the lease ask about them. */
export interface ProcTable {
  /** This process's pid. */
  readonly self: number;
  /** Whether `pid` runs (a zombie does not). */
  alive(pid: number): boolean;
  /** `<boot id>:<start time>`: with the pid it names one process, so a reused pid is told apart; null where it cannot be read. */
  startOf(pid: number): string | null;
  /** kill(2); false when the process is not there (or not ours). */
  kill(pid: number, signal: NodeJS.Signals | 0): boolean;
}

/** A clock and timers: what a part that only waits needs of the runtime. */
export type TimeSource = Pick<ProcessRuntime, 'clock' | 'timers'>;

export type StopSignal = 'SIGINT' | 'SIGTERM';

export interface Signals {
  /**
   * `handler` hears every SIGINT and SIGTERM until the returned function lets it go; after that a
   * signal ends the process at once with the shell's code for it (130, 143).
   */
  listen(handler: (signal: StopSignal) => void): () => void;
}

export interface ProcessRuntime {
  clock: Clock;
  timers: Timers;
  procs: ProcTable;
  signals: Signals;
  /** This host's name as the lock, the lease and the record give it (`$DCM_HOST`, else the machine's). */
  host: string;
}

export const REAL_PROCS: ProcTable = {
  self: process.pid,
  alive: processAlive,
  startOf(pid) {
    const st = readStat(pid);
    return st ? `${bootId()}:${st.starttime}` : null;
  },
  kill(pid, signal) {
    try {
      process.kill(pid, signal);
      return true;
    } catch {
      return false;
    }
  },
};

export const REAL_SIGNALS: Signals = {
  listen(handler) {
    const listener = (signal: NodeJS.Signals) => handler(signal as StopSignal);
    listen(exitAtOnce, false);
    listen(listener, true);
    return () => {
      // The new listener first: with none at all, even for an instant, Node gives the signal back
      // to its default action, and a second Ctrl-C landing then would kill dcm (exit by signal).
      listen(exitAtOnce, true);
      listen(listener, false);
    };
  },
};

function exitAtOnce(signal: NodeJS.Signals): void {
  process.exit(128 + os.constants.signals[signal]);
}

function listen(listener: (signal: NodeJS.Signals) => void, on: boolean): void {
  for (const s of ['SIGINT', 'SIGTERM'] as const) {
    process.off(s, listener);
    if (on) process.on(s, listener);
  }
}

/** This process's runtime; the host from `env` (`$DCM_HOST`, else the machine's name). */
export function realRuntime(env: NodeJS.ProcessEnv = process.env): ProcessRuntime {
  return { clock: REAL_CLOCK, timers: REAL_TIMERS, procs: REAL_PROCS, signals: REAL_SIGNALS, host: hostName(env) };
}
