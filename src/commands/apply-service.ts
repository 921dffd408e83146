/**
 * The body of `dcm strategy apply`, as a service: open the store, join the strategy's workers (a
 * server) or take the apply lock (a file), start, run the orchestrator with its heartbeat, its
 * notifier, the audit after each subcloud and the visible driver, then end and clean up. The
 * command (apply.ts) calls it with this process's runtime and environment; the simulator (src/sim)
 * calls the same function with a runtime, a store, sites and processes of its own, and nothing
 * else: a bug in the command's wiring shows up in both.
 *
 * Everything outside the process reaches it through `ApplyEnv`: time, timers, processes and
 * signals through its runtime (platform/runtime.ts), the sites through its driver.
 */
import fs from 'node:fs';
import { DcmError, OperationError } from '../domain/errors.js';
import { EVENTS, workerTakenText } from '../domain/events.js';
import { simLatencyMidpoint } from '../domain/estimate.js';
import { STRATEGY_ENDED, STRATEGY_RUNNING, statesOf, TYPES, type StrategyType } from '../domain/types.js';
import { parseTimestamp } from '../domain/time.js';
import { firstStartedAt } from '../store/status.js';
import { checkMetricsPath, configMetricsPath, MetricsFile, metricsInterval } from './metrics-file.js';
import type { Tracing } from './tracing.js';
import { visibleDriver } from '../drivers/visible.js';
import { endsReachStore, type DriverRunOptions, type StoredStrategy } from '../drivers/index.js';
import type { Driver } from '../drivers/driver.js';
import { withAuditAfter } from '../orchestrator/audit-after.js';
import { BUSY_RETRY_MS } from '../orchestrator/committer.js';
import { ApplyLock, takeoverNote } from '../orchestrator/lock.js';
import { Notifier, onEventOf } from '../orchestrator/notify.js';
import { Orchestrator } from '../orchestrator/orchestrator.js';
import type { ProgressChoice } from '../orchestrator/progress-choose.js';
import type { ProgressSink } from '../orchestrator/progress.js';
import type { TrackerInputs } from '../orchestrator/progress-tracker.js';
import { orchestratorRuntime, type CommitHooks, type CostCounters } from '../orchestrator/runtime.js';
import { LEASE_MS, WorkerLease } from '../orchestrator/workers.js';
import type { ProcessRuntime } from '../platform/runtime.js';
import { sleepOn } from '../platform/timers.js';
import type { Actor } from '../platform/who.js';
import { durationKey, durationStats, observedDurations } from '../store/durations.js';
import { recordEvent } from '../store/events.js';
import { applyFaultError, faultOf, serverFault } from '../store/faults.js';
import { liveEta } from './eta.js';
import { quickCheck } from '../store/maintenance.js';
import { openDb, setBusyWait, type Db } from '../store/open.js';
import { useWindowPageCache } from '../platform/sqlite-cache.js';
import { casStrategyState } from '../store/strategy.js';
import { isPgUrl } from '../domain/db-url.js';
import { withStoreFaults } from './context.js';
import type { Outcome } from './results.js';
import { strategyNotFound, theStrategy } from './strategy.js';

/** A strategy left in one of these by a process that is gone is taken up again (paused: waiting for resume). */
const RESUMABLE = STRATEGY_RUNNING;

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
  /** `--metrics-textfile PATH`: a Prometheus text file kept up to date (commands/metrics-file.ts). */
  metricsTextfile?: string;
  /** `--metrics-interval DURATION`, as given. */
  metricsInterval?: string;
}

/** What an apply runs on and with: everything outside the process. */
export interface ApplyEnv {
  /** The store: a file's path, or a postgresql:// address. */
  dbPath: string;
  /** Clocks, timers, processes and signals (platform/runtime.ts). */
  runtime: ProcessRuntime;
  /** Who acts, as the event record names them. */
  who: Actor;
  quiet: boolean;
  /** A result that cannot be shown (an unknown `-c` column) is refused before anything runs. */
  checkResult?: (result: unknown) => void;
  /** The progress the apply shows (the real one writes on stderr). */
  progress(choice: ProgressChoice): ProgressSink;
  /** What is said before the progress is shown (a wait for the database before this worker joins); nothing by default. */
  notice?: (text: string) => void;
  /** The strategy's driver, before the visible wrapper and the audit (drivers/index.ts; the simulator's sites). */
  driver(dbPath: string, strategy: StoredStrategy, opts?: DriverRunOptions): Promise<Driver>;
  /** Faults at commits (test hooks, the simulator), and the counters a test reads afterwards. */
  hooks: CommitHooks | null;
  counters?: (db: Db) => { counters: CostCounters; done: (driverCosts: Record<string, number>) => void } | null;
  /** How long a first Ctrl-C waits for the runs in flight (default 60 s). */
  drainMs?: number;
  /** The clock maintenance windows are decided by (a test's may be set ahead). */
  windowClock?: () => number;
  /** How often the orchestrator looks at the store for other shells' requests (default 250 ms). */
  pollMs?: number;
  /** Told the strategy's number of steps once the orchestrator has counted them (commands/apply.ts: the heap's growth). */
  sized?: (steps: number) => void;
  /** The lock's or the worker's fencing token (random by default; the simulator's are drawn from its seed). */
  token?: () => string;
  /**
   * Connections to the store: openDb with the runtime's clock by default; the simulator's pass
   * through its own gate (a host cut off from the store).
   */
  open?: (address: string) => Promise<Db | null>;
  /**
   * Join the strategy's workers under a lease (orchestrator/workers.ts) rather than take the apply
   * lock: a server's store always; the simulator's several hosts on a file too (SQLite's one writer
   * at a time stands in for the server's writers).
   */
  workers?: boolean;
  /** Whether runs' ends reach the store from the host that ran them (drivers/index.ts endsReachStore by default). */
  endsReachStore?: (extra: Record<string, unknown>) => boolean;
  /** The strategy's traces, when the environment asks for them (commands/tracing.ts); none by default. */
  tracing?: (s: { created_at: string; type: string }, who: { host: string; pid: number }) => Promise<Tracing | null>;
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

/** What the ETA starts from: this strategy's durations so far, earlier runs' statistics, the sim latency. */
async function estimateInputs(db: Db, type: string, extra: Record<string, unknown>): Promise<TrackerInputs> {
  // `eta`: the views say what `strategy status` says (the one estimator, commands/eta.ts).
  return { history: await durationStats(db, durationKey(type, extra)), observed: await observedDurations(db), fallbackMs: simLatencyMidpoint(extra), eta: liveEta(db) };
}

/** When the strategy's first step started (epoch ms), for the root span of its trace. */
async function firstStartMs(db: Db, rt: ProcessRuntime): Promise<number> {
  const first = await firstStartedAt(db);
  return first === null ? rt.clock.wall() : parseTimestamp(first) / 1000;
}

/** How long one try of a write waits for the writers' lock on a server. */
function serverTryMs(leaseMs: number): number {
  return Math.max(50, Math.min(1_000, Math.floor(leaseMs / 4)));
}

/** Run the strategy (`type`: refused if it is another's) to its end, as `dcm strategy apply` does. */
export async function applyStrategy(env: ApplyEnv, type?: StrategyType, opts: ApplyOptions = {}): Promise<Outcome> {
  const rt = env.runtime;
  // Option values on their own, before the file is read.
  const metricsPath = opts.metricsTextfile === undefined ? undefined : checkMetricsPath(opts.metricsTextfile);
  const metricsEvery = metricsInterval(opts.metricsInterval);
  const onServer = isPgUrl(env.dbPath);
  const shared = env.workers ?? onServer;
  const open = env.open ?? ((address: string) => openDb(address, { create: false, write: true, clock: rt.clock }));
  // On a server another session's lock (LOCK TABLE, DDL) keeps reads waiting too: a worker waits
  // for it as for dcm's own writers' lock, and says so once; before it has joined by this wait,
  // then by the orchestrator's busy rule (which a second Ctrl-C bounds). A read whose connection
  // was lost and could not be made again at once waits the same way (pg-database.ts outside).
  let progressRef: ProgressSink | null = null;
  let orchestratorRef: Orchestrator | null = null;
  const joining = new JoinWait(rt, (text) => (progressRef ? progressRef.note(text) : env.notice?.(text)));
  const db = await joining.whileLocked(onServer, () => withStoreFaults(env.dbPath, () => open(env.dbPath)));
  if (!db) strategyNotFound(type);
  if (onServer) db.waitForLocks?.((err) => (orchestratorRef ? orchestratorRef.waitForStore(err) : joining.wait(err)));
  const cost = env.counters?.(db) ?? null;
  // SPEC §2: every connection waits at least 5 s for another writer; past that the orchestrator
  // says so once and tries again (committer.ts), never dying of SQLITE_BUSY.
  // On a server each try waits at most a quarter of the lease (1 s at most), then the orchestrator
  // waits between tries. Nothing blocks the event loop, during a try or between: Ctrl-C, driver
  // answers and the lease's renewal (on its own connection) go on while another session holds the
  // writers' lock.
  await setBusyWait(db, onServer ? serverTryMs(opts.leaseMs ?? LEASE_MS) : 5000);
  if (!onServer) await useWindowPageCache(db);
  // A database on a server has no path to be removed or replaced under the apply.
  const checkFile = onServer ? () => {} : fileWatch(env.dbPath);
  // On a server each apply is one of the strategy's workers (orchestrator/workers.ts); a file has
  // one orchestrator, under the apply lock.
  // The lease is renewed on a connection of its own, never behind the writers' lock.
  const beatDb = onServer ? await joining.whileLocked(true, () => open(env.dbPath)) : null;
  const token = env.token?.();
  const lease = shared ? new WorkerLease(db, opts.leaseMs ?? LEASE_MS, opts.maxLocal ?? null, rt, { ...(beatDb ? { beatDb } : {}), ...(token ? { token } : {}) }) : null;
  const lock = new ApplyLock(db, env.dbPath, rt, token);
  const holder = lease ?? lock;
  let locked = false;
  let driver: Driver | null = null;
  let fileGone = false;
  let removeSignals: (() => void) | null = null;
  let notifier: Notifier | null = null;
  let metrics: MetricsFile | null = null;
  let tracing: Tracing | null = null;
  /** For the traces' end: the exit code, and the strategy's end once it has one. */
  let traceEnd: { exitCode: number | null; ended: { state: string; firstStartMs: number } | null } = { exitCode: null, ended: null };
  const sidecars = new Map<string, { dev: number; ino: number } | null>();
  try {
    // A file's pages are dcm's to check; a server keeps its own (its checksums and WAL).
    if (!onServer) await checkIntact(db, env.dbPath);
    // Not found, or ended, before anything else: an ended strategy has no use for the lock.
    const first = await theStrategy(db, type);
    const progress = env.progress({
      quiet: env.quiet,
      verbose: opts.verbose ?? false,
      intervalMs: opts.progressIntervalMs ?? 10_000,
      // -q shows no estimate: the history scan behind one is not worth making.
      inputs: env.quiet ? {} : await estimateInputs(db, first.type, first.extra),
    });
    progressRef = progress;
    // An unknown -c column is refused before anything runs (exit 2, nothing changed).
    env.checkResult?.({ kind: 'strategy', strategy: first });
    if (first.state !== 'initial' && !RESUMABLE.includes(first.state)) {
      throw new OperationError(`Strategy in state ${first.state} cannot be applied`);
    }
    const who = { ...env.who, host: holder.host, pid: holder.pid };
    if (lease) lease.record = (t, tx) => recordEvent(tx, who, EVENTS.workerTakenOver, workerTakenText(t));
    // Runs of a worker gone from another host are waited for (their ends reach the store) where the driver tells them.
    if (lease) lease.adoptsElsewhere = (env.endsReachStore ?? endsReachStore)(first.extra);
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
      // Waiting while another session holds the writers' lock, as a worker already running waits:
      // a second worker joining a busy strategy never dies of it.
      const taken = await joining.whileLocked(true, () => {
        // What kept this worker waiting may have kept the others' renewals away: their leases are
        // judged a lease later, by its heartbeat (workers.ts keptAway), not by this join.
        if (joining.waited) lease.keptAway();
        return lease.join(start);
      });
      for (const t of taken) progress.note(`took over the worker pid ${t.worker.pid} on ${t.worker.host} (${t.why})`);
      tracing = (await env.tracing?.(s, who)) ?? null;
      for (const t of taken) tracing?.event('worker taken over', { 'dcm.worker.pid': t.worker.pid, 'dcm.worker.host': t.worker.host, 'dcm.why': t.why, 'dcm.adopted': t.adopted, 'dcm.interrupted': t.interrupted });
    } else {
      const { tookOverFrom } = await lock.acquire(async (tx, holder) => {
        await start(tx);
        if (holder) await recordEvent(tx, who, EVENTS.lockTakenOver, takeoverNote(holder, rt));
      });
      if (tookOverFrom) progress.note(takeoverNote(tookOverFrom, rt));
      tracing = (await env.tracing?.(s, who)) ?? null;
      if (tookOverFrom) tracing?.event('lock taken over', { 'dcm.holder.pid': tookOverFrom.pid, 'dcm.holder.host': tookOverFrom.host });
    }
    locked = true;
    if (s.state !== 'initial') progress.note(`resuming the ${s.type} strategy (state ${s.state})`);

    if (!onServer) for (const suffix of ['-wal', '-shm']) sidecars.set(env.dbPath + suffix, identity(env.dbPath + suffix));
    // What a driver says is escaped and cut (visible.ts); the site's audit runs after each
    // subcloud's last state, when the strategy was created with one.
    const raw = await env.driver(env.dbPath, s, lease ? { leaseMs: lease.leaseMs } : {});
    // Its processes start while the orchestrator reads the strategy, not as the first runs wait.
    raw.warm?.();
    driver = withAuditAfter(visibleDriver(raw), { type: s.type as StrategyType, extra: s.extra });
    const orchestrator = new Orchestrator(orchestratorRuntime(rt, db, driver, env.hooks, cost?.counters ?? null), progress, {
      type: s.type as StrategyType,
      states: statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null; exec_states?: unknown }),
      stopOnFailure: s.stop_on_failure,
      campaign: s.created_at,
      extra: s.extra,
      // A file whose strategy has no timeout stored gets the type's default, never NaN (which
      // setTimeout takes as 1 ms: every operation would time out).
      stateTimeoutMs: Number(s.extra.state_timeout_ms) || TYPES[s.type as StrategyType].defaultStateTimeoutMs,
      drainMs: env.drainMs,
      pollMs: env.pollMs,
      fence: (tx) => holder.check(tx),
      fenceToken: holder.token,
      shared: lease,
      windowClock: env.windowClock,
      checkFile,
      file: env.dbPath,
      host: holder.host,
      who,
      observer: tracing ?? undefined,
      sized: env.sized,
    });
    orchestratorRef = orchestrator;
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
    // Held until this function returns, not only while the orchestrator runs: a Ctrl-C that comes
    // while the end is being written (or the file is busy) must not kill dcm by the default action.
    removeSignals = rt.signals.listen((signal) => orchestrator.interrupt(signal));
    // The strategy's on_event command hears what this apply records (a stage held, its end, …).
    const onEvent = onEventOf(s.extra);
    if (onEvent) notifier = await new Notifier(db, onEvent, s, who, (text) => progress.note(text), rt.timers).start();
    // The Prometheus text file: the option's, else the exec config's `metrics_textfile`.
    const metricsFile = metricsPath ?? configMetricsPath(s.extra);
    if (metricsFile) metrics = await new MetricsFile(db, metricsFile, metricsEvery, (text) => progress.warn(text), rt.timers, rt.clock.wall).start();
    const exitCode = await orchestrator.run();
    const final = await theStrategy(db);
    traceEnd = { exitCode, ended: tracing && STRATEGY_ENDED.includes(final.state) ? { state: final.state, firstStartMs: await firstStartMs(db, rt) } : null };
    return { result: { kind: 'strategy', strategy: final }, exitCode };
  } catch (err) {
    fileGone = err instanceof FileGoneError;
    // A fault met before the orchestrator ran (the lock's write into a full disk): the SPEC's one
    // line, as the orchestrator's own faults are, never SQLite's bare words (issue 49).
    throw (onServer ? serverFault(err, env.dbPath) : applyFaultError(err, env.dbPath)) ?? err;
  } finally {
    // The end's notice too (bounded by its command's timeout); a failure is recorded, never thrown.
    await notifier?.close();
    // The file's last write: the strategy as this apply leaves it.
    await metrics?.close();
    // The last spans leave (bounded: an endpoint that does not answer never holds the exit).
    await tracing?.close(traceEnd);
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
    cost?.done(driver?.costs?.() ?? {});
    removeSignals?.();
  }
}

/**
 * A worker not joined yet waits for a store another session holds locked (the writers' lock, or a
 * lock of a table dcm reads), saying so once, and tries again every BUSY_RETRY_MS: a worker
 * joining a busy strategy never dies of it. A lost connection is said as such (the next try
 * connects again), never as a lock.
 */
class JoinWait {
  private said = new Set<string>();

  /** Whether this worker has waited for the store so far. */
  get waited(): boolean {
    return this.said.size > 0;
  }

  constructor(
    private readonly rt: ProcessRuntime,
    private readonly say: (text: string) => void,
  ) {}

  async wait(err: unknown): Promise<void> {
    if (faultOf(err) !== 'busy') throw err;
    const lost = (err as { connectionLost?: boolean }).connectionLost === true;
    const text = lost
      ? 'the connection to the database server was lost: connecting again to join the workers'
      : 'the database is locked by another process: waiting for it to join the workers';
    if (!this.said.has(text)) this.say(text);
    this.said.add(text);
    await sleepOn(this.rt.timers, BUSY_RETRY_MS);
  }

  /** `fn` until it is not refused busy (when `waits`; else once). */
  async whileLocked<T>(waits: boolean, fn: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        if (!waits) throw err;
        await this.wait(err);
      }
    }
  }
}
