/**
 * A driver performs ONE state operation for ONE subcloud and reports how it ended. It never sees
 * the store or the orchestrator's worker registry (SPEC §1, §7).
 */
import type { ExtraArgs } from '../domain/options.js';
import type { StrategyType } from '../domain/types.js';
import type { AuditReport } from '../domain/audit.js';
import type { RunProcess } from '../platform/proc.js';

// A driver reports the process a run started (the store records it): the type is platform's.
export type { RunProcess };

export interface OperationRequest {
  cloud: string;
  type: StrategyType;
  /** The state whose operation to perform, its index in `states`, and all the type's states. */
  state: string;
  stateIndex: number;
  states: readonly string[];
  /** 1 for the first run of this state; more when an interrupted or failed run is run again. */
  attempt: number;
  /** The previous run of this state was cut off (a crash or a stop): this one may find it half done. */
  resumed?: boolean;
  /** Runs of this state that failed or timed out so far in this apply (a driver's retry budget). */
  failures?: number;
  /** The stage the subcloud is in. */
  stage?: number;
  /** The subcloud's own fields (group, software_version, location, …), null when unset. */
  subcloud?: Record<string, string | null>;
  /** The subcloud's labels (`subcloud update --label k=v`), key to value. */
  labels?: Readonly<Record<string, string>>;
  /** Identifies the strategy: a subcloud's side of an update belongs to one strategy. */
  campaign: string;
  /** The apply lock's token: a run carries it (DCM_FENCE) so that a site can refuse a displaced orchestrator. */
  fence?: string;
  extra: ExtraArgs;
  /**
   * The strategy-config options that apply to this subcloud (its own row, else the default row,
   * else dcmanager's defaults), keyed storage_apply_type, worker_apply_type, max_parallel_workers,
   * alarm_restriction_type, default_instance_action.
   */
  options: Readonly<Record<string, string | number>>;
  /** Aborted when the orchestrator stops waiting for this operation (timeout, hard stop). */
  signal: AbortSignal;
  /**
   * Called once the run began at its site (a driver that says `reportsStarts`): with the process
   * started for it, so that its identity is recorded at once, or null when it has none of its own
   * to record (the simulator's). The start rate counts a first start from here.
   */
  onStarted?: (proc: RunProcess | null) => void;
  /**
   * Called with the run's own word on how far it is (exec: the last line of `$DCM_PROGRESS`), while
   * it runs: only when it changed, at most about once a second, never once the run has ended. It
   * becomes the step's details until the run's result replaces them.
   */
  onProgress?: (text: string) => void;
}

export type OperationResult = (
  /**
   * Done: go on to `next` (default: the following state; `complete` to skip to the end). `audit`:
   * what the site said when audited after its last state (the subcloud row takes it).
   */
  | { kind: 'next'; next?: string; details?: string; audit?: AuditReport }
  | { kind: 'failed'; reason: string; timeout?: boolean; audit?: AuditReport }
  /**
   * This run ended without a result to act on: run the same state again, as a new attempt (its own
   * history row), after `delayMs`. `outcome` is how this run's history row ends.
   */
  | { kind: 'retry'; reason: string; outcome: 'failed' | 'timeout' | 'interrupted'; delayMs: number }
  /**
   * The site did not answer (exit 75, EX_TEMPFAIL): the step is deferred, its slot goes to the next
   * site, and the state runs again later as a new attempt, until the strategy's deadline.
   */
  | { kind: 'defer'; reason: string }
) & {
  /**
   * When the run ended, if that was well before its answer (epoch ms): a run adopted after a kill
   * -9 that ended while no dcm ran, by its status file's time. Its history row ends then, and its
   * duration is its own (issue 49: it was timed until its adoption).
   */
  endedAtMs?: number;
};

/** A run left `running` in the history by an orchestrator that is gone. */
export interface LeftRun {
  cloud: string;
  state: string;
  attempt: number;
  /** When its history row was opened (ISO 8601). */
  startedAt: string;
  proc: RunProcess | null;
  /** The host that started it, when recorded. */
  host?: string | null;
}

/**
 * What became of a left run: `interrupted` (it will run again, as the next attempt) or a result to
 * wait for (the run is still going, or it ended and left its status behind).
 */
export type Adoption = { kind: 'interrupted' } | { kind: 'wait'; result: Promise<OperationResult> };

/** A run's end as the host that ran it wrote it to the store (several hosts). */
export interface RemoteEnd {
  code: number | null;
  signal: string | null;
  /** What the run left for its outcome to be read from, as the driver wrote it. */
  facts: string;
}

/**
 * A run another host started, taken over with its worker: nothing here can see or stop it, so
 * its result is the one its host writes to the store (`key`), and by its host's own rules it may
 * still go for at most `maxLeftMs` (its state's timeout and kill grace, which its host enforces
 * even without its worker); past that with no end, it is held as of unknown outcome.
 */
export interface RemoteRun {
  key: string;
  maxLeftMs: number;
  /**
   * Run it again once `maxLeftMs` has passed with no end (the state's `on_lost_host: rerun`): at
   * least once, made safe by the site's fence check. Unset: held as of unknown outcome.
   */
  rerunAfterBound?: boolean;
  outcome(end: RemoteEnd): Promise<OperationResult>;
}

/** One site to audit: its name, its fields and labels (for placeholders), and a way to stop. */
export interface AuditRequest {
  cloud: string;
  type?: StrategyType;
  subcloud: Record<string, string | null>;
  labels: Readonly<Record<string, string>>;
  /** The strategy's extra args (type options for placeholders), when audited by an apply. */
  extra?: ExtraArgs;
  stage?: number;
  signal?: AbortSignal;
}

/** What an audit of one site gave: the site's report, or why there is none. */
export type AuditOutcome = { ok: true; report: AuditReport } | { ok: false; reason: string };

export interface Driver {
  run(req: OperationRequest): Promise<OperationResult>;
  /**
   * Ask the site what it is (software version, sync statuses, availability). Absent when the
   * driver has no audit (an exec config without `audit`).
   */
  audit?(req: AuditRequest): Promise<AuditOutcome>;
  /**
   * Called for each run a previous orchestrator left `running`, before anything starts. Without
   * it, every such run is interrupted and runs again.
   */
  adopt?(left: LeftRun, req: OperationRequest): Adoption;
  /** A run of another host's (its history names that host): how to learn its end; absent, it runs again. */
  remote?(left: LeftRun, req: OperationRequest): RemoteRun;
  /**
   * The only label keys this driver reads from a request's `labels` (the sim's `sim_unreachable`):
   * the orchestrator then reads which subclouds have one once, as the apply starts (and on
   * resume), instead of a subcloud's row at each first state. Absent: any label may be read (the
   * exec driver's `DCM_LABEL_*`).
   */
  readonly labelKeys?: readonly string[];
  /**
   * What the driver's own work cost so far, counted exactly (runs started, passes over /proc):
   * written with the apply's counters (`DCM_COUNTERS`), for the cost tests.
   */
  costs?(): Record<string, number>;
  /**
   * An apply is about to ask for runs: start now what the first run would start (the exec
   * driver's launcher), so that its start-up overlaps the orchestrator's own. Absent: nothing to start.
   */
  warm?(): void;
  /** The driver enforces its own per-state timeouts: the orchestrator sets none. */
  readonly ownsTimeouts?: boolean;
  /**
   * Each run calls `onStarted` once it began at its site, which may be well after `run()` was
   * called (a launcher's claim on a server that cannot be reached is tried again): the start rate
   * waits for it before the next first start. Absent: a run begins when `run()` is called.
   */
  readonly reportsStarts?: boolean;
  /**
   * Stop whatever is pending, wait until every process it started is gone, let go of resources.
   * `leaveRunning`: a worker whose subclouds were taken over (orchestrator/workers.ts) leaves the
   * runs it did not abort to the worker that adopted them; only the aborted ones are stopped.
   */
  close(opts?: { leaveRunning?: boolean }): Promise<void>;
}
