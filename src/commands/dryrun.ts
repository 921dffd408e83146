/**
 * `strategy create --dry-run`: the plan create would make, as a list (one row per stage, then a
 * total), with an estimated duration per stage. Nothing is written.
 */
import { ESTIMATE_SOURCE_LABEL, estimateStageMs, formatSpan, simLatencyMidpoint, stateMeans } from '../domain/estimate.js';
import type { ExtraArgs } from '../domain/options.js';
import type { Plan } from '../domain/planning.js';
import { statesOf, type StrategyType } from '../domain/types.js';
import { someOf } from '../domain/choices.js';
import { durationStats } from '../store/durations.js';
import type { Db } from '../store/open.js';
import { list, type ListResult, type Value } from './plain-results.js';

export const DRY_RUN_COLUMNS = ['stage', 'group', 'window', 'steps', 'estimated duration', 'estimate from', 'subclouds'];


/**
 * The plan as rows. Estimates come from the duration statistics of earlier strategies of the type
 * kept in the file, else from the sim driver's latency, else `unknown` (SPEC §4 "Estimates"), by
 * the same model as `strategy status`'s ETA.
 */
export function dryRunView(db: Db | null, plan: Plan, type: StrategyType, extra: ExtraArgs): ListResult {
  const states = statesOf(type, extra as { cert_file?: string | null });
  const { means, source, sds } = stateMeans(states, {
    history: db ? durationStats(db, type) : undefined,
    fallbackMs: simLatencyMidpoint(extra),
  });
  const byStage = new Map<number, string[]>();
  for (const s of plan.steps) {
    let names = byStage.get(s.stage);
    if (!names) byStage.set(s.stage, (names = []));
    names.push(s.name);
  }
  const from = ESTIMATE_SOURCE_LABEL[source];
  let total = 0;
  const rows: Value[][] = plan.stages.map((st) => {
    const names = byStage.get(st.stage) ?? [];
    const ms = means ? estimateStageMs(means, { window: st.window, notStarted: names.length, inFlight: [] }, sds) : null;
    if (ms !== null) total += ms;
    return [st.stage, st.groupName, st.window, names.length, ms === null ? 'unknown' : formatSpan(ms), from, someOf(names, 3).replace(/'/g, '')];
  });
  rows.push(['total', null, null, plan.steps.length, means ? formatSpan(total) : 'unknown', from, null]);
  return list(DRY_RUN_COLUMNS, rows);
}
