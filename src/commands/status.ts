/**
 * `dcm strategy status [--watch]` and `dcm strategy-step list --watch` (SPEC §4 "Visibility"):
 * where a strategy stands, read from the file by any process, while it applies or after.
 */
import { EXIT } from '../domain/errors.js';
import { exitForState, failureLimit } from '../domain/control.js';
import { formatSpan, ESTIMATE_SOURCE_LABEL } from '../domain/estimate.js';
import { parseTimestamp } from '../domain/time.js';
import { STRATEGY_ENDED, type StrategyType } from '../domain/types.js';
import { readLock } from '../store/lock.js';
import { openDb, type Db } from '../store/open.js';
import { deferredSteps, firstStartedAt, latestFailures, latestProgress, runningOps, stageStateCounts } from '../store/status.js';
import { deferredLine, etaWords, type Hold } from '../domain/status-hold.js';
import { parseTime } from '../store/clock.js';
import { actionText, OPERATOR_EVENTS } from '../domain/events.js';
import { lastEventOf } from '../store/events.js';
import { dataVersion, getStrategy, listStages } from '../store/strategy.js';
import { listStepColumns } from '../store/steps.js';
import { holderAlive } from '../orchestrator/lock.js';
import { unknownEnds } from './live-runs.js';
import { storeClockMs, workerStatuses } from '../store/workers.js';
import { show, type Result, type ShowResult, type Value } from './plain-results.js';
import { strategyNotFound, theStrategy } from './strategy.js';
import { runtimeOf, withReadDb, type Ctx } from './context.js';
import type { ProcessRuntime } from '../platform/runtime.js';
import { describeRate, readStoredRate } from '../domain/start-rate.js';
import type { CommandResult, Outcome, Printable, StepLine } from './results.js';
import { tellDeadOrchestrator } from './tell.js';
import { notFoundSayingKept } from './archive.js';
import { sleep } from '../platform/timers.js';
import { gateLines } from '../domain/stage-gates.js';
import { listStageGates } from '../store/stage-gates.js';
import { auditWarnings, type AuditWarnings } from '../store/audit-warnings.js';
import { maintenanceText, strategyEta } from './eta.js';

/** The record's fields, in order (documented in the README). */
export const STATUS_FIELDS = [
  'strategy type',
  'state',
  'last action',
  'driver',
  'stage',
  'window',
  'start rate',
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

/** How many deferred steps the record names, each with its next try. */
const STATUS_DEFERRED = 5;

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
async function orchestratorText(db: Db, rt: ProcessRuntime, nowMs: number, unknown: readonly string[]): Promise<string | null> {
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
  const alive = holderAlive(lock, rt, nowMs);
  return `pid ${lock.pid} on ${lock.host}, heartbeat ${age} ago${alive ? '' : ' (gone)'}`;
}

/**
 * The status record of the strategy (of `type` if given), read in one read transaction: its
 * counts come from one moment, so an operation that starts between two of its reads is never
 * counted as in flight beside a step still counted as initial.
 */
export async function statusRecord(db: Db, type: StrategyType | undefined, rt: ProcessRuntime, nowMs = rt.clock.wall()): Promise<{ record: ShowResult; state: string; exit: number }> {
  return await db.transaction(async (tx) => readStatus(tx, type, rt, nowMs)).deferred();
}

async function readStatus(db: Db, type: StrategyType | undefined, rt: ProcessRuntime, nowMs: number): Promise<{ record: ShowResult; state: string; exit: number }> {
  const s = await theStrategy(db, type);
  const stageRows = await listStages(db);
  const windows = new Map(stageRows.map((r) => [r.stage, r.max_parallel]));
  const rateOptions = new Map(stageRows.map((r) => [r.stage, readStoredRate(r.start_rate)]));
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
    // The one estimator (eta.ts): the live view and the report say the same. Paused, nothing new
    // starts: the estimate is the time the rest takes once resumed; a known wait is in it, and said.
    const est = await strategyEta(db, s, nowMs, { counts, windows, current });
    hold = est.hold;
    eta = etaWords(est.eta);
    source = est.eta === null ? null : ESTIMATE_SOURCE_LABEL[est.source];
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
    'start rate': current === undefined || !rateOptions.get(current) ? null : describeRate(rateOptions.get(current)!, perState.complete),
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
    orchestrator: await orchestratorText(db, rt, nowMs, ended ? [] : await unknownEnds(db, s, rt)),
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
  const r = await withReadDb(ctx, null, async (db) => await getStrategy(db) ? (await statusRecord(db, type, runtimeOf(ctx))).record : null);
  // None: after a delete, says what is kept of the last one (issue 49).
  if (!r) return await notFoundSayingKept(ctx, type);
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
        const { record, state, exit } = await statusRecord(db, type, runtimeOf(ctx));
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
