/** `dcm strategy apply`: the orchestrator (src/orchestrator) run as a service of this command. */
import { OperationError, UsageError } from '../domain/errors.js';
import { STRATEGY_RUNNING, statesOf, TYPES, type StrategyType } from '../domain/types.js';
import { openDb, setBusyWait, type Db } from '../store/open.js';
import { useWindowPageCache } from '../platform/sqlite-cache.js';
import { quickCheck } from '../store/maintenance.js';
import { isPgUrl } from '../domain/db-url.js';
import { casStrategyState } from '../store/strategy.js';
import fs from 'node:fs';
import v8 from 'node:v8';
import { DcmError } from '../domain/errors.js';
import { applyFaultError, faultOf, serverFault } from '../store/faults.js';
import { createDriver, endsReachStore } from '../drivers/index.js';
import { withAuditAfter } from '../orchestrator/audit-after.js';
import type { Driver } from '../drivers/driver.js';
import { strategyNotFound, theStrategy } from './strategy.js';
import type { Outcome } from './results.js';
import { withStoreFaults, type RunCtx } from './context.js';
import { ApplyLock, takeoverNote } from '../orchestrator/lock.js';
import { LEASE_MS, WorkerLease, type TakenOver } from '../orchestrator/workers.js';
import { BUSY_RETRY_MS } from '../orchestrator/committer.js';
import { sleep } from '../platform/timers.js';
import { workerTakenText } from '../domain/events.js';
import { Orchestrator } from '../orchestrator/orchestrator.js';
import { realRuntime } from '../orchestrator/runtime.js';
import { makeProgress } from '../orchestrator/progress-choose.js';
import type { TrackerInputs } from '../orchestrator/progress-tracker.js';
import { applyTestHooks, windowClock } from '../orchestrator/test-env.js';
import { durationKey, durationStats, observedDurations } from '../store/durations.js';
import { simLatencyMidpoint } from '../domain/estimate.js';
import { onSignals } from '../orchestrator/signals.js';
import { EVENTS } from '../domain/events.js';
import { whoAmI } from '../platform/who.js';
import { recordEvent } from '../store/events.js';
import { Notifier, onEventOf } from '../orchestrator/notify.js';
import { liveEta } from './eta.js';

/** A strategy left in one of these by a process that is gone is taken up again (paused: waiting for resume). */
const RESUMABLE = STRATEGY_RUNNING;

/** `$DCM_DRAIN_MS`: how long a first Ctrl-C waits (default 60 s); anything but a number is ignored. */
function drainMs(text: string | undefined): number | undefined {
  const ms = Number(text);
  return text && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** The path no longer names the file that is open: removed, or replaced by another file. */
class FileGoneError extends DcmError {
  readonly code = 'DCM_FILE_GONE';
}

/**
 * A check that `file` still names the file opened as `identity` (device and inode). A removed or
 * replaced file is never written again: another file at that path would pair with this one's WAL.
 */
function fileWatch(file: string): () => void {
  const { dev, ino } = fs.statSync(file);
  return () => {
    let st: fs.Stats | null = null;
    try {
      st = fs.statSync(file);
    } catch {
      st = null;
    }
    if (!st || st.dev !== dev || st.ino !== ino) {
      throw new FileGoneError(`${file} was ${st ? 'replaced' : 'removed'} while the strategy was applying`);
    }
  };
}

/** Device and inode of a file, or null when there is none. */
function identity(file: string): { dev: number; ino: number } | null {
  try {
    const { dev, ino } = fs.statSync(file);
    return { dev, ino };
  } catch {
    return null;
  }
}

/**
 * After the path was removed or replaced under the apply: this process's own `-wal` and `-shm`
 * (the same inodes it had) would pair with whatever file is at the path next and corrupt it.
 */
function removeOwnSidecars(sidecars: Map<string, { dev: number; ino: number } | null>): void {
  for (const [file, was] of sidecars) {
    const now = identity(file);
    if (was && now && now.dev === was.dev && now.ino === was.ino) fs.rmSync(file, { force: true });
  }
}

/** A file that fails SQLite's quick check is not applied: its steps cannot be trusted. */
async function checkIntact(db: Db, file: string): Promise<void> {
  let lines: string[];
  try {
    lines = await quickCheck(db);
  } catch (err) {
    throw applyFaultError(err, file) ?? err;
  }
  if (lines.length !== 1 || lines[0] !== 'ok') {
    throw new OperationError(`${file} is damaged (${lines[0]}); nothing was applied. dcm db check says what is wrong; restore a backup`);
  }
}

/** How apply shows its progress (SPEC §4 "Visibility"), and how it takes part with other workers. */
export interface ApplyOptions {
  /** `--max-local N`: at most N subclouds in flight in this worker (a PostgreSQL store). */
  maxLocal?: number;
  /** `--lease SECONDS` as milliseconds: how long this worker may go unheard before others take its subclouds over. */
  leaseMs?: number;
  /** One line per transition (off the live view). */
  verbose?: boolean;
  /** A summary line this often off a terminal (default 10 s; 0: none). */
  progressIntervalMs?: number;
}

/** What the ETA starts from: this strategy's durations so far, earlier runs' statistics, the sim latency. */
async function estimateInputs(db: Db, type: string, extra: Record<string, unknown>): Promise<TrackerInputs> {
  // `eta`: the views say what `strategy status` says (the one estimator, commands/eta.ts).
  return { history: await durationStats(db, durationKey(type, extra)), observed: await observedDurations(db), fallbackMs: simLatencyMidpoint(extra), eta: liveEta(db) };
}

export async function strategyApply(ctx: RunCtx, type?: StrategyType, opts: ApplyOptions = {}): Promise<Outcome> {
  // Test hooks are checked before the file is read: a stray variable is a usage error.
  const { hooks, counters } = await applyTestHooks(process.env, ctx.dbPath);
  const onServer = isPgUrl(ctx.dbPath);
  if (!onServer && (opts.maxLocal !== undefined || opts.leaseMs !== undefined)) {
    throw new UsageError(`${opts.maxLocal !== undefined ? '--max-local' : '--lease'} needs a PostgreSQL store: a file has one orchestrator`);
  }
  const db = await withStoreFaults(ctx.dbPath, () => openDb(ctx.dbPath, { create: false, write: true }));
  if (!db) strategyNotFound(type);
  const cost = counters(db);
  // SPEC §2: every connection waits at least 5 s for another writer; past that the orchestrator
  // says so once and tries again (committer.ts), never dying of SQLITE_BUSY.
  // On a server each try waits at most a quarter of the lease (1 s at most), then the orchestrator
  // waits between tries. Nothing blocks the event loop, during a try or between: Ctrl-C, driver
  // answers and the lease's renewal (on its own connection) go on while another session holds the
  // writers' lock.
  await setBusyWait(db, onServer ? serverTryMs(opts.leaseMs ?? LEASE_MS) : 5000);
  if (!onServer) await useWindowPageCache(db);
  // A database on a server has no path to be removed or replaced under the apply.
  const checkFile = onServer ? () => {} : fileWatch(ctx.dbPath);
  // On a server each apply is one of the strategy's workers (orchestrator/workers.ts); a file has
  // one orchestrator, under the apply lock.
  // The lease is renewed on a connection of its own, never behind the writers' lock.
  const beatDb = onServer ? await openDb(ctx.dbPath, { create: false, write: true }) : null;
  const lease = onServer ? new WorkerLease(db, opts.leaseMs ?? LEASE_MS, opts.maxLocal ?? null, beatDb ? { beatDb } : {}) : null;
  const lock = new ApplyLock(db, ctx.dbPath);
  const holder = lease ?? lock;
  let locked = false;
  let driver: Driver | null = null;
  let fileGone = false;
  let removeSignals: (() => void) | null = null;
  let orchestratorRef: Orchestrator | null = null;
  let notifier: Notifier | null = null;
  const sidecars = new Map<string, { dev: number; ino: number } | null>();
  try {
    // A file's pages are dcm's to check; a server keeps its own (its checksums and WAL).
    if (!onServer) await checkIntact(db, ctx.dbPath);
    // Not found, or ended, before anything else: an ended strategy has no use for the lock.
    const first = await theStrategy(db, type);
    const progress = makeProgress(process.stderr, {
      quiet: ctx.quiet,
      verbose: opts.verbose ?? false,
      intervalMs: opts.progressIntervalMs ?? 10_000,
      // -q shows no estimate: the history scan behind one is not worth making.
      inputs: ctx.quiet ? {} : await estimateInputs(db, first.type, first.extra),
    });
    // An unknown -c column is refused before anything runs (exit 2, nothing changed).
    ctx.checkResult?.({ kind: 'strategy', strategy: first });
    if (first.state !== 'initial' && !RESUMABLE.includes(first.state)) {
      throw new OperationError(`Strategy in state ${first.state} cannot be applied`);
    }
    const who = { ...whoAmI(), host: holder.host, pid: holder.pid };
    if (lease) lease.record = (t, tx) => recordEvent(tx, who, EVENTS.workerTakenOver, workerTakenText(t));
    // Runs of a worker gone from another host are waited for (their ends reach the store) where the driver tells them.
    if (lease) lease.adoptsElsewhere = endsReachStore(first.extra);
    let s = first;
    // Inside the lock's (or the join's) transaction: through its handle.
    const start = async (tx: Db) => {
      s = await theStrategy(tx, type);
      if (s.state === 'initial') {
        if (!await casStrategyState(tx, ['initial'], 'applying')) throw new OperationError(`Strategy in state ${(await theStrategy(tx)).state} cannot be applied`);
      } else if (!RESUMABLE.includes(s.state)) throw new OperationError(`Strategy in state ${s.state} cannot be applied`);
      await recordEvent(tx, who, EVENTS.applyStarted, s.state === 'initial' ? 'initial -> applying' : `resuming (state ${s.state})`);
    };
    // The lock (or the worker's row), the start and their record in one transaction: a refused
    // start takes no lock and records nothing.
    if (lease) {
      const taken = await joinWhenFree(lease, start, (text) => progress.note(text));
      for (const t of taken) progress.note(`took over the worker pid ${t.worker.pid} on ${t.worker.host} (${t.why})`);
    } else {
      const { tookOverFrom } = await lock.acquire(async (tx, holder) => {
        await start(tx);
        if (holder) await recordEvent(tx, who, EVENTS.lockTakenOver, takeoverNote(holder, Date.now(), lock.host));
      });
      if (tookOverFrom) progress.note(takeoverNote(tookOverFrom, Date.now(), lock.host));
    }
    locked = true;
    if (s.state !== 'initial') progress.note(`resuming the ${s.type} strategy (state ${s.state})`);

    if (!onServer) for (const suffix of ['-wal', '-shm']) sidecars.set(ctx.dbPath + suffix, identity(ctx.dbPath + suffix));
    // The site's audit after each subcloud's last state, when the strategy was created with one.
    driver = withAuditAfter(await createDriver(ctx.dbPath, s), { type: s.type as StrategyType, extra: s.extra });
    const orchestrator = new Orchestrator(realRuntime(db, driver, hooks, cost?.counters ?? null), progress, {
      type: s.type as StrategyType,
      states: statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null; exec_states?: unknown }),
      stopOnFailure: s.stop_on_failure,
      campaign: s.created_at,
      extra: s.extra,
      // A file whose strategy has no timeout stored gets the type's default, never NaN (which
      // setTimeout takes as 1 ms: every operation would time out).
      stateTimeoutMs: Number(s.extra.state_timeout_ms) || TYPES[s.type as StrategyType].defaultStateTimeoutMs,
      drainMs: drainMs(process.env.DCM_DRAIN_MS),
      fence: (tx) => holder.check(tx),
      fenceToken: holder.token,
      shared: lease,
      windowClock: windowClock(process.env),
      checkFile,
      file: ctx.dbPath,
      who,
    });
    // Lost: stop at once and write nothing more (no drain, no finish: they would write).
    if (lease) {
      lease.startHeartbeat(
        (lost) => orchestrator.stopWith(lost),
        (err) => orchestrator.writeFailed(err),
        (takeOver) => orchestrator.beat(takeOver),
      );
    } else {
      lock.startHeartbeat(
        (lost) => orchestrator.stopWith(lost),
        (err) => orchestrator.writeFailed(err),
      );
    }
    orchestratorRef = orchestrator;
    // The apply's live data is a window's worth (steps are read from the file a window at a
    // time); what grows is garbage, which V8 lets the old generation reach a multiple of what the
    // last full GC kept. A smaller growing factor keeps a long apply's peak near its live data
    // (100,000 subclouds, window 1,000: 178 -> 140 MiB peak RSS, a few % more time; BENCHMARKS.md).
    v8.setFlagsFromString('--heap-growing-percent=20');
    // Held until this command returns, not only while the orchestrator runs: a Ctrl-C that comes
    // while the end is being written (or the file is busy) must not kill dcm by the default action.
    removeSignals = onSignals((signal) => orchestrator.interrupt(signal));
    // The strategy's on_event command hears what this apply records (a stage held, its end, …).
    const onEvent = onEventOf(s.extra);
    if (onEvent) notifier = await new Notifier(db, onEvent, s, who, (text) => progress.note(text)).start();
    const exitCode = await orchestrator.run();
    return { result: { kind: 'strategy', strategy: await theStrategy(db) }, exitCode };
  } catch (err) {
    fileGone = err instanceof FileGoneError;
    // A fault met before the orchestrator ran (the lock's write into a full disk): the SPEC's one
    // line, as the orchestrator's own faults are, never SQLite's bare words (issue 49).
    throw (onServer ? serverFault(err, ctx.dbPath) : applyFaultError(err, ctx.dbPath)) ?? err;
  } finally {
    // The end's notice too (bounded by its command's timeout); a failure is recorded, never thrown.
    await notifier?.close();
    // Waits until every process the driver started is gone: dcm never leaves one behind, but the
    // runs a worker taken over leaves to the worker that adopted them.
    await driver?.close({ leaveRunning: orchestratorRef?.leftGoing ?? false });
    // Let go of the lock, unless the path now names another file: that one is not ours to write.
    try {
      if (locked && !fileGone) {
        if (lease) await lease.leave();
        else await lock.release();
      }
    } catch {
      // A full or busy file: the lock of a process that is gone is taken over by the next apply.
    }
    db.close();
    beatDb?.close();
    if (fileGone) removeOwnSidecars(sidecars);
    if (cost) fs.writeFileSync(cost.file, `${JSON.stringify({ ...cost.counters, driver: driver?.costs?.() ?? {} })}\n`);
    removeSignals?.();
  }
}


/** How long one try of a write waits for the writers' lock on a server. */
function serverTryMs(leaseMs: number): number {
  return Math.max(50, Math.min(1_000, Math.floor(leaseMs / 4)));
}

/**
 * Join the strategy's workers, waiting while another session holds the writers' lock (said once),
 * as a worker already running waits: a second worker joining a busy strategy never dies of it.
 */
async function joinWhenFree(lease: WorkerLease, start: (tx: Db) => Promise<void>, note: (text: string) => void): Promise<TakenOver[]> {
  let said = false;
  for (;;) {
    try {
      return await lease.join(start);
    } catch (err) {
      if (faultOf(err) !== 'busy') throw err;
      if (!said) note('the database is locked by another process: waiting for it to join the workers');
      said = true;
      await sleep(BUSY_RETRY_MS);
    }
  }
}
