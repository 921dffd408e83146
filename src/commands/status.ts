/**
 * `dcm strategy status [--watch]` and `dcm strategy-step list --watch` (SPEC §4 "Visibility"):
 * where a strategy stands, read from the file by any process, while it applies or after.
 */
import { EXIT } from '../domain/errors.js';
import { exitForState, failureLimit } from '../domain/control.js';
import {
  estimateRemainingMs,
  formatSpan,
  simLatencyMidpoint,
  stateMeans,
  ESTIMATE_SOURCE_LABEL,
  type EstimateSource,
  type StageLeft,
} from '../domain/estimate.js';
import { parseTimestamp } from '../domain/time.js';
import { STRATEGY_ENDED, statesOf, type StrategyType } from '../domain/types.js';
import { durationKey, durationStats, observedDurations } from '../store/durations.js';
import { readLock } from '../store/lock.js';
import { openDb, type Db } from '../store/open.js';
import { deferredSteps, firstStartedAt, initialStepsByStageGroup, latestFailures, latestProgress, runningOps, stageStateCounts } from '../store/status.js';
import { deferredLine, etaText, stageHold, type ClosedWindow, type Hold } from '../domain/status-hold.js';
import { parseTime } from '../store/clock.js';
import { actionText, OPERATOR_EVENTS } from '../domain/events.js';
import { lastEventOf } from '../store/events.js';
import { dataVersion, getStrategy, listStages, type Strategy } from '../store/strategy.js';
import { listStepColumns } from '../store/steps.js';
import { holderAlive } from '../orchestrator/lock.js';
import { unknownEnds } from './live-runs.js';
import { storeClockMs, workerStatuses } from '../store/workers.js';
import { show, type Result, type ShowResult, type Value } from './plain-results.js';
import { strategyNotFound, theStrategy } from './strategy.js';
import { withReadDb, type Ctx } from './context.js';
import type { CommandResult, Outcome, Printable, StepLine } from './results.js';
import { tellDeadOrchestrator } from './tell.js';
import { sleep } from '../platform/timers.js';
import { gateLines } from '../domain/stage-gates.js';
import { listStageGates } from '../store/stage-gates.js';
import { auditWarnings, type AuditWarnings } from '../store/audit-warnings.js';
import { isOpen, nextOpening, parseMaintenanceWindow, windowLabel } from '../domain/maintenance.js';
import { groupsWithWindows, initialStepsByGroup } from '../store/groups.js';
import { windowClock } from '../orchestrator/test-env.js';

/** The record's fields, in order (documented in the README). */
export const STATUS_FIELDS = [
  'strategy type',
  'state',
  'last action',
  'driver',
  'stage',
  'window',
  'steps',
  'initial',
  'in progress',
  'complete',
  'failed',
  'deferred',
  'deferred sites',
  'aborted',
  'in flight',
  'progress',
  'failures',
  'audit',
  'max failures',
  'stage gates',
  'started_at',
  'elapsed',
  'eta',
  'estimate from',
  'orchestrator',
  'maintenance',
] as const;

/** How many of the latest failures (and of the progress lines of runs in flight) the record names. */
const STATUS_FAILURES = 5;

/** How long the strategy has left, by the same model as the live view's ETA. */
export async function estimateLeft(
  db: Db,
  s: Strategy,
  counts: { stage: number; state: string; n: number }[],
  windows: Map<number, number>,
  nowMs: number,
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
    if (!e) stages.set(stage, (e = { window: windows.get(stage) ?? 1, notStarted: 0, inFlight: [] }));
    return e;
  };
  // Steps mid-state: those with an operation running have run for a while; the others (between
  // two operations, or held) count from now.
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

/** The failure budget as the operator gave it, with what a percentage comes to. */
function budgetText(stored: string | null, stopOnFailure: boolean, total: number): string | null {
  const limit = failureLimit(stored, stopOnFailure, total);
  if (limit === null) return null;
  if (!stored) return '1 (stop on failure)';
  return stored.endsWith('%') ? `${stored} (${limit} of ${total} steps)` : stored;
}

/**
 * The apply lock's holder; on a PostgreSQL store, the strategy's workers instead (one line each:
 * host, pid, heartbeat age, subclouds in flight and ended).
 */
async function orchestratorText(db: Db, nowMs: number, unknown: readonly string[]): Promise<string | null> {
  const workers = await workerStatuses(db);
  if (workers.length || unknown.length) {
    // Heartbeats are on the store's clock, not this host's.
    const clock = await storeClockMs(db);
    const lines = workers.map((w) => {
      const age = Math.max(0, clock - w.heartbeatMs);
      const gone = age > w.leaseMs ? ' (lease ran out)' : '';
      return `${w.host} pid ${w.pid}, heartbeat ${formatSpan(age)} ago${gone}, ${w.inFlight} in flight, ${w.done} done`;
    });
    // Runs whose host has no live worker and whose end has not come (live-runs.ts), after them.
    return [...(workers.length ? [`${workers.length} worker(s):`, ...lines] : ['no live worker']), ...unknown].join('\n');
  }
  const lock = await readLock(db);
  if (!lock) return null;
  const age = formatSpan(Math.max(0, nowMs - lock.heartbeat_ms));
  const alive = holderAlive(lock, nowMs);
  return `pid ${lock.pid} on ${lock.host}, heartbeat ${age} ago${alive ? '' : ' (gone)'}`;
}

/** The window clock (test-hooks.ts), made once per process: a test's clock runs on between frames. */
let windowNow: (() => number) | null = null;

/**
 * The groups whose subclouds not started have a maintenance window: each closed one waits, with
 * when it opens (ISO, UTC), each open one says so. Null when no such group has a step left.
 */
async function maintenanceText(db: Db): Promise<string | null> {
  const groups = await groupsWithWindows(db);
  if (groups.length === 0) return null;
  const waiting = await initialStepsByGroup(db, groups.map((g) => g.id));
  if (waiting.size === 0) return null;
  windowNow ??= windowClock(process.env);
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

/** How many deferred steps the record names, each with its next try. */
const STATUS_DEFERRED = 5;

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
    windowNow ??= windowClock(process.env);
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

/**
 * The status record of the strategy (of `type` if given), read in one read transaction: its
 * counts come from one moment, so an operation that starts between two of its reads is never
 * counted as in flight beside a step still counted as initial.
 */
export async function statusRecord(db: Db, type: StrategyType | undefined, nowMs: number): Promise<{ record: ShowResult; state: string; exit: number }> {
  return await db.transaction(async (tx) => readStatus(tx, type, nowMs)).deferred();
}

async function readStatus(db: Db, type: StrategyType | undefined, nowMs: number): Promise<{ record: ShowResult; state: string; exit: number }> {
  const s = await theStrategy(db, type);
  const stageRows = await listStages(db);
  const windows = new Map(stageRows.map((r) => [r.stage, r.max_parallel]));
  const counts = await stageStateCounts(db);
  const perState = { initial: 0, 'in progress': 0, complete: 0, failed: 0, deferred: 0, aborted: 0 };
  let total = 0;
  const open = new Set<number>();
  const stagesWithSteps = new Set<number>();
  for (const c of counts) {
    total += c.n;
    stagesWithSteps.add(c.stage);
    if (c.state in perState && c.state !== 'in progress') perState[c.state as keyof typeof perState] += c.n;
    else perState['in progress'] += c.n;
    if (c.state !== 'complete' && c.state !== 'failed' && c.state !== 'aborted') open.add(c.stage);
  }
  const stageList = [...stagesWithSteps].sort((a, b) => a - b);
  const ended = STRATEGY_ENDED.includes(s.state);
  // The stage being run: the first with a step not ended; once all have ended, the last.
  const current = ended || open.size === 0 ? stageList[stageList.length - 1] : Math.min(...open);
  const stageIndex = current === undefined ? -1 : stageList.indexOf(current);
  const running = (await runningOps(db)).length;
  const failures = await latestFailures(db, STATUS_FAILURES);
  const progress = running ? await latestProgress(db, STATUS_FAILURES) : [];
  const startedAt = await firstStartedAt(db);
  let elapsed: string | null = null;
  if (startedAt) {
    const from = parseTimestamp(startedAt) / 1000;
    const to = ended && s.updated_at ? parseTimestamp(s.updated_at) / 1000 : nowMs;
    elapsed = formatSpan(Math.max(0, to - from));
  }
  let eta: string | null = null;
  let source: string | null = null;
  let hold: Hold | null = null;
  if (!ended) {
    const est = await estimateLeft(db, s, counts, windows, nowMs);
    const held = current === undefined ? { hold: null, latest: null } : await holdOf(db, current, counts, nowMs, est.stepMs);
    hold = held.hold;
    // Paused, nothing new starts: the estimate is the time the rest takes once resumed; a known
    // wait (a soak, a maintenance window) is in it, and said.
    eta = est.ms === null ? 'unknown' : etaText(est.ms, hold, s.state === 'paused', held.latest);
    source = est.ms === null ? null : ESTIMATE_SOURCE_LABEL[est.source];
  }
  const deferred = perState.deferred ? await deferredSteps(db, STATUS_DEFERRED) : [];
  // Complete steps whose site's audit disagreed (issue 49): the exit code apply gives them too.
  const audit = perState.complete ? await auditWarnings(db, STATUS_FAILURES) : { count: 0, first: [] };
  const exit = exitForState(s.state, audit.count, s.extra.audit_disagrees_ok === true);
  const values: Record<(typeof STATUS_FIELDS)[number], Value> = {
    'strategy type': s.type,
    state: s.state,
    'last action': ((e) => (e ? actionText(e) : null))(await lastEventOf(db, OPERATOR_EVENTS)),
    driver: (s.extra.driver as string | undefined) ?? 'sim',
    stage: current === undefined ? null : `${stageIndex + 1} of ${stageList.length}${hold ? `, ${hold.text}` : ''}`,
    window: current === undefined ? null : (windows.get(current) ?? null),
    steps: total,
    initial: perState.initial,
    'in progress': perState['in progress'],
    complete: perState.complete,
    failed: perState.failed,
    deferred: perState.deferred,
    'deferred sites': deferred.length
      ? [...deferred.map((d) => deferredLine({ ...d, dueMs: d.retry_at === null ? null : parseTime(d.retry_at) }, nowMs)),
         ...(perState.deferred > deferred.length ? [`and ${perState.deferred - deferred.length} more (strategy-step list --state deferred)`] : [])].join('\n')
      : null,
    aborted: perState.aborted,
    'in flight': running,
    progress: progress.length ? progress.map((p) => `${p.cloud}: ${p.details}`).join('\n') : null,
    failures: failures.length ? failures.map((f) => `${f.cloud}: ${f.details}`).join('\n') : null,
    audit: audit.count ? auditText(audit, s.extra.audit_disagrees_ok === true) : null,
    'max failures': budgetText(s.max_failures, s.stop_on_failure, total),
    'stage gates': gateLines(await listStageGates(db))?.join('\n') ?? null,
    started_at: startedAt,
    elapsed,
    eta,
    'estimate from': source,
    orchestrator: await orchestratorText(db, nowMs, ended ? [] : await unknownEnds(db, s)),
    maintenance: ended ? null : await maintenanceText(db),
  };
  return { record: show(STATUS_FIELDS.map((f) => [f, values[f]])), state: s.state, exit };
}

/** `2 complete subcloud(s) whose audit disagrees (exit 5)`, then the first ones with their details. */
function auditText(a: AuditWarnings, ok: boolean): string {
  const more = a.count > a.first.length ? [`and ${a.count - a.first.length} more (strategy report)`] : [];
  return [`${a.count} complete subcloud(s) whose audit disagrees (${ok ? 'exit 0: --audit-disagrees-ok' : 'exit 5'})`, ...a.first.map((f) => `${f.cloud}: ${f.details}`), ...more].join('\n');
}

/** The exit code `apply` gives a strategy that ended in `state`. */

/** Emit a frame for the CLI to draw (in place on a terminal); false once nobody reads them any more. */
export type Emit = (r: Printable) => Promise<boolean>;

export interface WatchOptions {
  /** How often the file is looked at for a change. */
  pollMs?: number;
  /** Redraw at least this often even without a change (elapsed time, heartbeat age). */
  refreshMs?: number;
}


/**
 * Poll the file (cheaply: `PRAGMA data_version` moves only when another connection commits),
 * emit a frame on a change (and every `refreshMs`), until `frame` says the strategy ended.
 */
async function watchLoop(
  ctx: Ctx,
  frame: (db: Db) => Promise<{ result: Printable; done: number | null }>,
  emit: Emit,
  o: WatchOptions,
): Promise<number> {
  const pollMs = o.pollMs ?? 250;
  const refreshMs = o.refreshMs ?? 1000;
  let db = await openDb(ctx.dbPath, { create: false });
  try {
    let version = -1;
    let last = 0;
    for (;;) {
      if (!db) {
        await sleep(pollMs);
        db = await openDb(ctx.dbPath, { create: false });
        continue;
      }
      const v = await dataVersion(db);
      if (v !== version || Date.now() - last >= refreshMs) {
        version = v;
        last = Date.now();
        const f = await frame(db);
        if (!await emit(f.result)) return EXIT.ok;
        if (f.done !== null) return f.done;
      }
      await sleep(pollMs);
    }
  } finally {
    db?.close();
  }
}

export async function strategyStatus(ctx: Ctx, type?: StrategyType): Promise<Result | Outcome> {
  const r = await withReadDb(ctx, null, async (db) => await getStrategy(db) ? (await statusRecord(db, type, Date.now())).record : null);
  if (!r) strategyNotFound(type);
  // An orchestrator found dead is told to on_event once (issue 49: commands/tell.ts).
  const told = await tellDeadOrchestrator(ctx);
  return told ? { result: r, warnings: [told] } : r;
}

/** `strategy status --watch`: redraw until the strategy ends, then exit as `apply` would. */
export async function watchStatus(ctx: Ctx, type: StrategyType | undefined, o: WatchOptions = {}): Promise<(emit: Emit) => Promise<number>> {
  // Not found is an error at once, as without --watch.
  (await withReadDb(ctx, null, (db) => theStrategy(db, type))) ?? strategyNotFound(type);
  return async (emit) =>
    await watchLoop(
      ctx,
      async (db) => {
        const { record, state, exit } = await statusRecord(db, type, Date.now());
        return { result: record, done: STRATEGY_ENDED.includes(state) ? exit : null };
      },
      emit,
      o,
    );
}

/** `strategy-step list --watch`: redraw on change until the strategy ends (or is gone). */
export function watchSteps(ctx: Ctx, filter: { states?: string[]; stage?: number }, o: WatchOptions = {}): (emit: Emit) => Promise<number> {
  return async (emit) =>
    await watchLoop(
      ctx,
      async (db) => {
        const s = await getStrategy(db);
        const result: CommandResult = { kind: 'steps', rows: s ? (await listStepColumns(db, filter) as StepLine[]) : [] };
        return { result, done: !s || STRATEGY_ENDED.includes(s.state) ? EXIT.ok : null };
      },
      emit,
      // The step list changes with every commit: redraw on change only.
      { refreshMs: Infinity, ...o },
    );
}
