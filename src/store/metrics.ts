/**
 * What the metrics file shows (domain/metrics.ts), read from the store in one read transaction:
 * a few grouped counts, whatever the fleet, so that it costs the same at 10 and at 10,000 sites.
 */
import type { Db } from './open.js';
import { sql } from './statements.js';
import { UNKNOWN_PREFIX } from './steps.js';
import { DEFERRED_RUN_PREFIX } from './deferrals.js';

export interface MetricsRead {
  type: string;
  state: string;
  createdAt: string;
  extraArgs: string;
  steps: Record<string, number>;
  /** Open steps by stage (not complete, failed nor aborted): where the rollout is. */
  openStages: number[];
  lastStage: number | null;
  runsStarted: number;
  runsEnded: Record<string, number>;
  runsInFlight: number;
  stages: { stage: number; window: number; startRate: string | null }[];
  gateHolds: number;
}

export async function readMetrics(db: Db): Promise<MetricsRead | undefined> {
  return await db.transaction(async (tx) => {
    const s = (await sql(tx, 'SELECT type, state, created_at, extra_args FROM strategy WHERE id = 1').get()) as
      | { type: string; state: string; created_at: string; extra_args: string }
      | undefined;
    if (!s) return undefined;
    const byState = (await sql(tx, 'SELECT stage, state, count(*) AS n FROM strategy_step GROUP BY stage, state').all()) as { stage: number; state: string; n: number }[];
    const steps: Record<string, number> = {};
    const open = new Set<number>();
    let lastStage: number | null = null;
    for (const r of byState) {
      steps[r.state] = (steps[r.state] ?? 0) + Number(r.n);
      if (!['complete', 'failed', 'aborted'].includes(r.state)) open.add(r.stage);
      lastStage = Math.max(lastStage ?? r.stage, r.stage);
    }
    // A run held as of unknown outcome is still `running` (store/runs.ts); a deferral closes its run
    // saying so (store/deferrals.ts): each counted under its own outcome.
    const runs = (await sql(
      tx,
      `SELECT CASE WHEN outcome = 'running' AND details LIKE $1 THEN 'unknown'
                   WHEN outcome <> 'running' AND details LIKE $2 THEN 'deferred' ELSE outcome END AS o, count(*) AS n
       FROM step_history GROUP BY 1`,
    ).all(`${UNKNOWN_PREFIX}%`, `${DEFERRED_RUN_PREFIX}%`)) as { o: string; n: number }[];
    const runsEnded: Record<string, number> = {};
    let runsStarted = 0;
    let runsInFlight = 0;
    for (const r of runs) {
      const n = Number(r.n);
      runsStarted += n;
      if (r.o === 'running') runsInFlight += n;
      else runsEnded[r.o] = (runsEnded[r.o] ?? 0) + n;
    }
    const stages = ((await sql(tx, 'SELECT stage, max_parallel, start_rate FROM strategy_stage ORDER BY stage').all()) as { stage: number; max_parallel: number; start_rate: string | null }[])
      .map((r) => ({ stage: r.stage, window: r.max_parallel, startRate: r.start_rate }));
    const gateHolds = Number(await sql(tx, `SELECT count(*) FROM strategy_event WHERE event = 'stage gate' AND details LIKE '%: held: %'`).pluck().get());
    return {
      type: s.type,
      state: s.state,
      createdAt: s.created_at,
      extraArgs: s.extra_args,
      steps,
      openStages: [...open].sort((a, b) => a - b),
      lastStage,
      runsStarted,
      runsEnded,
      runsInFlight,
      stages,
      gateHolds,
    };
  }).deferred();
}
