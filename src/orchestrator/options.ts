/**
 * What an apply hands the orchestrator beside its runtime (runtime.ts): the strategy's type and
 * states, its options, the fence and the file's checks, who runs it, and, for one of several
 * workers, its lease.
 */
import type { ExtraArgs } from '../domain/options.js';
import type { StrategyType } from '../domain/types.js';
import type { Actor } from '../platform/who.js';
import type { WorkerLease } from './workers.js';
import type { Db } from '../store/open.js';
import type { RunObserver } from './observer.js';

export interface OrchestratorOptions {
  type: StrategyType;
  states: readonly string[];
  /** `--stop-on-failure`: a failure budget of 1 when the strategy has none of its own. */
  stopOnFailure: boolean;
  campaign: string;
  extra: ExtraArgs;
  stateTimeoutMs: number;
  /** How often external changes (abort, pause, window, from another shell) are looked for. */
  pollMs?: number;
  /** How long a first Ctrl-C waits for the operations in flight. */
  drainMs?: number;
  /**
   * The fence (SPEC §2.1): runs first in every transaction this orchestrator makes and throws once
   * another process holds the apply lock, so a displaced orchestrator writes nothing more.
   */
  fence?: (tx: Db) => Promise<void>;
  /** Throws when the path no longer names the file that is open (removed or replaced); polled. */
  checkFile?: () => void;
  /** The path, for the messages of file faults. */
  file?: string;
  /** The apply lock's token, handed to every run (DCM_FENCE) so a site can refuse a stale orchestrator. */
  fenceToken?: string;
  /** Who runs this apply, for the event record (none: nothing is recorded). */
  who?: Actor;
  /** The clock maintenance windows are decided by (test-hooks.ts `windowClock`); the runtime's if absent. */
  windowClock?: () => number;
  /** One of several workers on the strategy (a PostgreSQL store, workers.ts). Absent: the one orchestrator of its file. */
  shared?: WorkerLease | null;
  /** The host recorded with each run's process (the simulator names its hosts). */
  host?: string;
  /** Told of each run's start and end and of the fleet's events (the traces: observer.ts). */
  observer?: RunObserver;
  /** Told the strategy's number of steps once they are counted (the apply's memory follows it: commands/apply.ts). */
  sized?: (steps: number) => void;
}
