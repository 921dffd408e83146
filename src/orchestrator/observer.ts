/**
 * What an apply may watch of the orchestrator's runs beside its progress: each run as it starts
 * (or is adopted from an apply that is gone) and as it ends, and the events of the fleet (runs
 * adopted, a worker taken over). The traces (commands/tracing.ts, the OpenTelemetry SDK) are made
 * from it; without an observer nothing is built for it.
 *
 * Told only what is committed: a run starts here once its history row is written, and ends once
 * its end is.
 */
export interface RunStart {
  /** The run's history row: its key from start to end. */
  historyId: number;
  cloud: string;
  state: string;
  attempt: number;
  stage: number;
  /** DCM_RUN_ID and DCM_FENCE, as the run is handed them. */
  runId: string;
  fence: string | undefined;
  /** When it started here, or was adopted here (epoch ms, the runtime's clock). */
  atMs: number;
  /** Left going by an apply that is gone, and waited for here rather than run again. */
  adopted: boolean;
}

export interface RunEnd {
  historyId: number;
  /** ok, failed, timeout, skipped, interrupted (the history's outcome). */
  outcome: string;
  /** The run's details as the history keeps them (a failure's reason). */
  reason: string;
  atMs: number;
}

export interface RunObserver {
  runStarted(r: RunStart): void;
  runEnded(r: RunEnd): void;
  /** Something of the fleet: `runs adopted`, `worker taken over`, `lock taken over`. */
  event(name: string, attributes: Record<string, string | number | boolean>): void;
}
