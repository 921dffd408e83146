/**
 * A driver performs ONE state operation for ONE subcloud and reports how it ended. It never sees
 * the store or the orchestrator's worker registry (SPEC §1, §7).
 */
import type { ExtraArgs } from '../domain/options.js';
import type { StrategyType } from '../domain/types.js';

export interface OperationRequest {
  cloud: string;
  type: StrategyType;
  /** The state whose operation to perform, its index in `states`, and all the type's states. */
  state: string;
  stateIndex: number;
  states: readonly string[];
  /** 1 for the first run of this state; more when an interrupted run is run again. */
  attempt: number;
  /** Identifies the strategy: a subcloud's side of an update belongs to one strategy. */
  campaign: string;
  extra: ExtraArgs;
  /**
   * The strategy-config options that apply to this subcloud (its own row, else the default row,
   * else dcmanager's defaults), keyed storage_apply_type, worker_apply_type, max_parallel_workers,
   * alarm_restriction_type, default_instance_action.
   */
  options: Readonly<Record<string, string | number>>;
  /** Aborted when the orchestrator stops waiting for this operation (timeout, hard stop). */
  signal: AbortSignal;
}

export type OperationResult =
  /** Done: go on to `next` (default: the following state; `complete` to skip to the end). */
  | { kind: 'next'; next?: string; details?: string }
  | { kind: 'failed'; reason: string };

export interface Driver {
  run(req: OperationRequest): Promise<OperationResult>;
  /** Stop whatever is pending and let go of resources; the process may then exit. */
  close(): void;
}
