/**
 * `strategy create --dry-run`: the plan create would make, as a list (one row per stage, then a
 * total), with an estimated duration per stage. Nothing is written.
 */
import {
  ESTIMATE_SOURCE_LABEL,
  estimateStageMs,
  estimateWindowedStageMs,
  formatSpan,
  simLatencyMidpoint,
  stateMeans,
  type WindowedPart,
} from '../domain/estimate.js';
import { isOpen, nextOpening, parseMaintenanceWindow } from '../domain/maintenance.js';
import { groupsWithWindows, subcloudGroupsOf } from '../store/groups.js';
import { windowClock } from '../orchestrator/test-env.js';
import type { ExtraArgs } from '../domain/options.js';
import type { Plan } from '../domain/planning.js';
import { statesOf, type StrategyType } from '../domain/types.js';
import { someOf } from '../domain/choices.js';
import { rateInForce, readStoredRate, startSpacingMs } from '../domain/start-rate.js';
import { durationKey, durationStats } from '../store/durations.js';
import type { Db } from '../store/open.js';
import { list, type ListResult, type Value } from './plain-results.js';

export const DRY_RUN_COLUMNS = ['stage', 'group', 'window', 'steps', 'estimated duration', 'estimate from', 'subclouds', 'plan digest'];


/**
 * The plan as rows. Estimates come from the duration statistics of earlier strategies of the type
 * kept in the file, else from the sim driver's latency, else `unknown` (SPEC §4 "Estimates"), by
 * the same model as `strategy status`'s ETA.
 */
export async function dryRunView(
  db: Db | null,
  plan: Plan,
  type: StrategyType,
  extra: ExtraArgs,
  digest: string | null = null,
  /** Each stage's start rate as planned (stored JSON): a stage's subclouds start no faster. */
  rates: ReadonlyMap<number, string | null> = new Map(),
): Promise<ListResult> {
  const states = statesOf(type, extra as { cert_file?: string | null });
  const { means, source, sds } = stateMeans(states, {
    history: db ? await durationStats(db, durationKey(type, extra)) : undefined,
    fallbackMs: simLatencyMidpoint(extra),
  });
  const byStage = new Map<number, string[]>();
  for (const s of plan.steps) {
    let names = byStage.get(s.stage);
    if (!names) byStage.set(s.stage, (names = []));
    names.push(s.name);
  }
  const from = ESTIMATE_SOURCE_LABEL[source];
  const windows = db ? await windowedParts(db, plan) : null;
  let total = 0;
  const rows: Value[][] = plan.stages.map((st) => {
    const names = byStage.get(st.stage) ?? [];
    const parts = windows?.parts.get(st.stage);
    let ms: number | null = null;
    let opens = '';
    if (means && parts) {
      // A stage some of whose subclouds wait for their maintenance window: the wait is in its time.
      ms = estimateWindowedStageMs(means, st.window, parts, total);
      // The last window the stage waits for, from its start: when its last subclouds may go.
      const last = Math.max(...parts.map((p) => p.opensAt(total)));
      if (last > total) opens = ` (window opens ${new Date(windows!.nowMs + last).toISOString()})`;
    } else if (means) {
      const rate = readStoredRate(rates.get(st.stage));
      ms = estimateStageMs(means, { window: st.window, notStarted: names.length, inFlight: [], startSpacingMs: rate ? startSpacingMs(rateInForce(rate, 0)) : undefined }, sds);
    }
    if (ms !== null) total += ms;
    const text = ms === null ? 'unknown' : Number.isFinite(ms) ? formatSpan(ms) + opens : 'unknown';
    return [st.stage, st.groupName, st.window, names.length, text, from, someOf(names, 3).replace(/'/g, ''), null];
  });
  // The plan's digest on the total row (`strategy create --plan DIGEST` creates this plan only).
  rows.push(['total', null, null, plan.steps.length, means ? formatSpan(total) : 'unknown', from, null, digest]);
  return list(DRY_RUN_COLUMNS, rows);
}

/**
 * Each stage's subclouds by maintenance window (stages none of whose subclouds has one are left
 * out: the plain estimate holds for them), with when each may start, from the window clock's now.
 */
async function windowedParts(db: Db, plan: Plan): Promise<{ parts: Map<number, WindowedPart[]>; nowMs: number } | null> {
  const groups = await groupsWithWindows(db);
  if (groups.length === 0) return null;
  const nowMs = windowClock(process.env, db.clock)();
  const groupOf = await subcloudGroupsOf(db, groups.map((g) => g.id));
  const opensAt = new Map<number, (atMs: number) => number>();
  for (const g of groups) {
    const w = parseMaintenanceWindow(g.maintenance_window);
    const tz = g.maintenance_tz ?? 'UTC';
    // The last closed stretch found: asked again inside it, the answer is the same opening.
    let closedFrom = Infinity;
    let closedTo = -Infinity;
    opensAt.set(g.id, (atMs) => {
      if (atMs >= closedFrom && atMs < closedTo) return closedTo;
      const at = new Date(nowMs + atMs);
      if (isOpen(w, tz, at)) return atMs;
      closedFrom = atMs;
      closedTo = nextOpening(w, tz, at).getTime() - nowMs;
      return closedTo;
    });
  }
  const parts = new Map<number, WindowedPart[]>();
  const byKey = new Map<string, WindowedPart>();
  const windowed = new Set<WindowedPart>();
  for (const s of plan.steps) {
    const gid = groupOf.get(s.subcloudId) ?? 0;
    const key = `${s.stage}:${gid}`;
    let part = byKey.get(key);
    if (!part) {
      part = { count: 0, opensAt: opensAt.get(gid) ?? ((atMs) => atMs) };
      byKey.set(key, part);
      if (opensAt.has(gid)) windowed.add(part);
      let list = parts.get(s.stage);
      if (!list) parts.set(s.stage, (list = []));
      list.push(part);
    }
    part.count++;
  }
  for (const [stage, list] of parts) if (list.every((p) => !windowed.has(p))) parts.delete(stage);
  return { parts, nowMs };
}
