/**
 * The one estimator of the time a strategy has left (issue 49: the live view said `ETA 21s` while
 * `status` said `1h12m`, and `ETA 0ms` while a run was held of unknown outcome). `strategy status`,
 * the report and apply's live view read it here, from the store, in the same words
 * (domain/status-hold.ts etaWords): the durations seen (else earlier strategies', else the sim's
 * latency), the steps left per stage and window, the runs in flight for how long, the known waits
 * (a soak, a maintenance window, a deferred site's next try), and what only the operator ends (a
 * pause, a gate holding, a run of unknown outcome).
 */
import {
  estimateRemainingMs,
  simLatencyMidpoint,
  stateMeans,
  type EstimateSource,
  type StageLeft,
} from '../domain/estimate.js';
import { isOpen, nextOpening, parseMaintenanceWindow, windowLabel } from '../domain/maintenance.js';
import { etaOf, stageHold, type ClosedWindow, type Eta, type Hold } from '../domain/status-hold.js';
import { parseTimestamp } from '../domain/time.js';
import { STRATEGY_ENDED, statesOf, type StrategyType } from '../domain/types.js';
import { windowClock } from '../orchestrator/test-env.js';
import { rateInForce, readStoredRate, startSpacingMs } from '../domain/start-rate.js';
import { parseTime } from '../store/clock.js';
import { durationKey, durationStats, observedDurations } from '../store/durations.js';
import { groupsWithWindows, initialStepsByGroup } from '../store/groups.js';
import type { Db } from '../store/open.js';
import { unknownRuns } from '../store/runs.js';
import { listStageGates } from '../store/stage-gates.js';
import { initialStepsByStageGroup, latestDeferredDue, runningOps, stageStateCounts } from '../store/status.js';
import { getStrategy, listStages, type Strategy } from '../store/strategy.js';

export interface StrategyEta {
  /** Null: nothing to estimate from, or the strategy has ended. */
  eta: Eta | null;
  source: EstimateSource;
  /** What holds the stage being run (its gate, its maintenance windows), for the stage row. */
  hold: Hold | null;
}

/** How long the strategy has left, and what it waits for; read in the caller's (read) transaction. */
export async function strategyEta(
  db: Db,
  s: Strategy,
  nowMs: number,
  known?: { counts: { stage: number; state: string; n: number }[]; windows: Map<number, number>; current: number | undefined },
): Promise<StrategyEta> {
  if (STRATEGY_ENDED.includes(s.state)) return { eta: null, source: 'unknown', hold: null };
  const counts = known?.counts ?? (await stageStateCounts(db));
  const windows = known?.windows ?? new Map((await listStages(db)).map((r) => [r.stage, r.max_parallel]));
  const current = known ? known.current : firstOpen(counts);
  // Each stage's start rate in force, ramped by the sites complete (domain/start-rate.ts).
  const complete = counts.filter((c) => c.state === 'complete').reduce((a, c) => a + c.n, 0);
  const rates = new Map<number, number>();
  for (const r of await listStages(db)) {
    const rate = readStoredRate(r.start_rate);
    if (rate) rates.set(r.stage, rateInForce(rate, complete));
  }
  const est = await estimateLeft(db, s, counts, windows, nowMs, rates);
  const held = current === undefined ? { hold: null, latest: null } : await holdOf(db, current, counts, nowMs, est.stepMs);
  if (est.ms === null) return { eta: null, source: est.source, hold: held.hold };
  // A deferred site is tried again at its due time: the rollout ends no sooner than the last one's try.
  const due = await latestDeferredDue(db);
  const dueMs = due === null ? null : parseTime(due);
  const deferred = dueMs !== null && dueMs > nowMs && est.stepMs !== null
    ? { ms: dueMs - nowMs + est.stepMs, label: `a deferred site's next try at ${new Date(dueMs).toISOString()}` }
    : null;
  const unknown = (await unknownRuns(db)).size;
  return { eta: etaOf(est.ms, held.hold, s.state === 'paused', held.latest, { deferred, unknown }), source: est.source, hold: held.hold };
}

/** The first stage with a step not ended. */
function firstOpen(counts: { stage: number; state: string }[]): number | undefined {
  const open = counts.filter((c) => !STRATEGY_ENDED.includes(c.state)).map((c) => c.stage);
  return open.length ? Math.min(...open) : undefined;
}

/** How long the strategy has left by the steps still to run (domain/estimate.ts), without waits. */
async function estimateLeft(
  db: Db,
  s: Strategy,
  counts: { stage: number; state: string; n: number }[],
  windows: Map<number, number>,
  nowMs: number,
  /** Each stage's start rate in force (starts a minute); absent: none. */
  rates: Map<number, number> = new Map(),
): Promise<{ ms: number | null; source: EstimateSource; stepMs: number | null }> {
  const states = statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null });
  const { means, source, sds } = stateMeans(states, {
    observed: await observedDurations(db),
    history: await durationStats(db, durationKey(s.type, s.extra)),
    fallbackMs: simLatencyMidpoint(s.extra),
  });
  if (!means) return { ms: null, source, stepMs: null };
  const stages = new Map<number, StageLeft & { inFlight: { stateIndex: number; elapsedMs: number }[] }>();
  const stageOf = (stage: number) => {
    let e = stages.get(stage);
    if (!e) {
      const perMin = rates.get(stage);
      stages.set(stage, (e = { window: windows.get(stage) ?? 1, notStarted: 0, inFlight: [], startSpacingMs: perMin ? startSpacingMs(perMin) : undefined }));
    }
    return e;
  };
  // Steps mid-state: those with an operation running have run for a while (counted from its own
  // start, an adopted run's too); the others (between two operations, or held) count from now.
  const running = new Map<string, number[]>();
  for (const op of (await runningOps(db))) {
    const key = `${op.stage}\u0000${op.state}`;
    let list = running.get(key);
    if (!list) running.set(key, (list = []));
    list.push(Math.max(0, nowMs - parseTimestamp(op.started_at) / 1000));
  }
  for (const c of counts) {
    if (c.state === 'complete' || c.state === 'failed' || c.state === 'aborted') continue;
    const e = stageOf(c.stage);
    // A deferred step runs its state again from the start: as one not started yet.
    if (c.state === 'initial' || c.state === 'deferred') {
      e.notStarted += c.n;
      continue;
    }
    const stateIndex = states.indexOf(c.state);
    const elapsed = running.get(`${c.stage}\u0000${c.state}`) ?? [];
    for (let i = 0; i < c.n; i++) e.inFlight.push({ stateIndex, elapsedMs: elapsed[i] ?? 0 });
  }
  const ordered = [...stages.entries()].sort((a, b) => a[0] - b[0]).map(([, e]) => e);
  // One subcloud's time through every state: what a subcloud that starts last adds to the wait.
  return { ms: estimateRemainingMs(means, ordered, sds), source, stepMs: means.reduce((a, b) => a + b, 0) };
}

/** The window clock (test-hooks.ts), made once per process: a test's clock runs on between frames. */
let windowNow: (() => number) | null = null;

/**
 * The groups whose subclouds not started have a maintenance window: each closed one waits, with
 * when it opens (ISO, UTC), each open one says so. Null when no such group has a step left.
 */
export async function maintenanceText(db: Db): Promise<string | null> {
  const groups = await groupsWithWindows(db);
  if (groups.length === 0) return null;
  const waiting = await initialStepsByGroup(db, groups.map((g) => g.id));
  if (waiting.size === 0) return null;
  windowNow ??= windowClock(process.env, db.clock);
  const now = new Date(windowNow());
  const lines: string[] = [];
  for (const g of groups) {
    const n = waiting.get(g.id);
    if (!n) continue;
    const w = parseMaintenanceWindow(g.maintenance_window);
    const tz = g.maintenance_tz ?? 'UTC';
    const label = windowLabel(w.text, tz);
    lines.push(
      isOpen(w, tz, now)
        ? `${g.name}: ${n} subcloud(s) to start, maintenance window ${label} open`
        : `${g.name}: ${n} subcloud(s) wait for maintenance window ${label}, opens ${nextOpening(w, tz, now).toISOString()}`,
    );
  }
  return lines.join('\n');
}

/**
 * What holds `current` back (domain/status-hold.ts), and the latest a closed maintenance window
 * lets the rollout end (from now): its stage's gates, and the windows its steps not started wait for.
 */
async function holdOf(
  db: Db,
  current: number,
  stageCounts: { stage: number; state: string; n: number }[],
  nowMs: number,
  stepMs: number | null,
): Promise<{ hold: Hold | null; latest: { ms: number; label: string } | null }> {
  const gates = (await listStageGates(db)).map((g) => ({ ...g, dueMs: g.gate_due_at === null ? null : parseTime(g.gate_due_at) }));
  const closed: ClosedWindow[] = [];
  let latest: { ms: number; label: string } | null = null;
  const groups = await groupsWithWindows(db);
  if (groups.length) {
    windowNow ??= windowClock(process.env, db.clock);
    const wnow = windowNow();
    const byStage = await initialStepsByStageGroup(db, groups.map((g) => g.id));
    const closedOf = new Map<number, ClosedWindow>();
    for (const g of groups) {
      const w = parseMaintenanceWindow(g.maintenance_window);
      const tz = g.maintenance_tz ?? 'UTC';
      if (isOpen(w, tz, new Date(wnow))) continue;
      const opens = nextOpening(w, tz, new Date(wnow));
      closedOf.set(g.id, { group: g.name, label: windowLabel(w.text, tz), opensMs: opens.getTime() - wnow + nowMs, opensIso: opens.toISOString() });
    }
    for (const r of byStage) {
      const c = closedOf.get(r.group_id);
      if (!c) continue;
      if (stepMs !== null && (latest === null || c.opensMs - nowMs + stepMs > latest.ms)) latest = { ms: c.opensMs - nowMs + stepMs, label: c.label };
      if (r.stage === current && !closed.includes(c)) closed.push(c);
    }
    // The stage is held by its windows only when nothing of it runs and every step to start waits.
    const mine = stageCounts.filter((c) => c.stage === current);
    const initial = mine.filter((c) => c.state === 'initial').reduce((a, c) => a + c.n, 0);
    const waiting = byStage.filter((r) => r.stage === current && closedOf.has(r.group_id)).reduce((a, r) => a + r.n, 0);
    const busy = mine.some((c) => !['initial', 'deferred', 'complete', 'failed', 'aborted'].includes(c.state));
    if (busy || initial === 0 || waiting < initial) closed.length = 0;
  }
  return { hold: stageHold({ current, gates, closed, nowMs }), latest };
}

/** The estimate as apply's views read it (progress-tracker.ts), on apply's connection, one read transaction each. */
export function liveEta(db: Db): (nowMs: number) => Promise<{ eta: Eta | null; source: EstimateSource }> {
  return async (nowMs) =>
    await db
      .transaction(async (tx) => {
        const s = await getStrategy(tx);
        const r = s ? await strategyEta(tx, s, nowMs) : null;
        return { eta: r?.eta ?? null, source: r?.source ?? 'unknown' };
      })
      .deferred();
}
