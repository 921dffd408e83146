/**
 * What the orchestrator runs on, as one value: the process's runtime (platform/runtime.ts: its
 * clocks, timers, process table and signals), its store, the driver that acts on sites, and the
 * faults a test or the simulator puts at its commits. A real apply passes this process's; the
 * simulator (src/sim) passes each simulated process its own (a clock that may step, timers it can
 * freeze or end, its host's process table), simulated sites and its own faults, so the same
 * orchestrator code runs in both. Nothing in src/orchestrator reaches a clock, a timer, a process,
 * the driver or the store except through the runtime it was given (test/runtime-lint.test.ts).
 *
 * Owns nothing: it only names the parts. Never holds the registry or any state of a run.
 */
import type { Db } from '../store/open.js';
import type { Driver } from '../drivers/driver.js';
import type { ProcessRuntime } from '../platform/runtime.js';

/** Faults at the commit path: every commit is a point a test or the simulator can name (its N counts from 1). */
export interface CommitHooks {
  beforeCommit(n: number): void | Promise<void>;
  /** Inside the Nth commit's transaction (`tx`, its handle), once its fence is checked. */
  inCommit(n: number, tx: Db): void | Promise<void>;
  afterCommit(n: number): void | Promise<void>;
}

/** What an apply cost, counted exactly (`DCM_TEST_HOOKS=1 DCM_COUNTERS=FILE`): guards that do not flake. */
export interface CostCounters {
  /**
   * Commits made on the orchestrator's connection: its write transactions (immediate, outermost)
   * and its writes outside any transaction (each one a commit of its own). Counted at the
   * connection, not by the committer, so that a commit added anywhere is counted.
   */
  commits: number;
  /** Step transitions committed (each opens, closes or moves one step). */
  transitions: number;
  /** SQL statements run on the orchestrator's connection (reads and writes, in or out of a transaction). */
  statements: number;
  /** Steps' details written from runs' progress lines (each a row changed). */
  details: number;
  /**
   * Reads outside any transaction (each takes and drops a WAL read lock of its own): a few per
   * apply and per poll, never one per subcloud started.
   */
  autocommitReads: number;
}

export interface Runtime extends ProcessRuntime {
  db: Db;
  driver: Driver;
  /** Faults at commits (test hooks, the simulator); null in real use. */
  hooks: CommitHooks | null;
  counters: CostCounters | null;
}

/** The orchestrator's runtime: the process's own, with its store, driver, faults and counters. */
export function orchestratorRuntime(proc: ProcessRuntime, db: Db, driver: Driver, hooks: CommitHooks | null = null, counters: CostCounters | null = null): Runtime {
  return { ...proc, db, driver, hooks, counters };
}
