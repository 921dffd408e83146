/** `dcm strategy apply` and `dcm strategy abort`. */
import { OperationError } from '../domain/errors.js';
import { statesOf, TYPES, type StrategyType } from '../domain/types.js';
import { openDb } from '../store/open.js';
import { casStrategyState, getStrategy } from '../store/strategy.js';
import { abortInitialSteps, abortMidStateSteps, interruptRunning } from '../store/transitions.js';
import { deleteLock, readLock } from '../store/lock.js';
import { SimDriver, simSettings } from '../drivers/sim/index.js';
import { withExistingWriteDb } from '../commands/context.js';
import { strategyNotFound, theStrategy } from '../commands/strategy.js';
import { strategyShow } from '../commands/views.js';
import type { Outcome, RunCtx } from '../cli/runner.js';
import { ApplyLock, holderAlive } from './lock.js';
import { Orchestrator } from './orchestrator.js';
import { makeProgress } from './progress-choose.js';
import type { TrackerInputs } from './progress-tracker.js';
import { durationStats, observedDurations } from '../store/durations.js';
import { simLatencyMidpoint } from '../domain/estimate.js';
import type { Db } from '../store/open.js';
import { onSignals } from './signals.js';

const RESUMABLE = ['applying', 'abort requested', 'aborting'];

/** `$DCM_DRAIN_MS`: how long a first Ctrl-C waits (default 60 s); anything but a number is ignored. */
function drainMs(text: string | undefined): number | undefined {
  const ms = Number(text);
  return text && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** How apply shows its progress (SPEC §4 "Visibility"). */
export interface ApplyOptions {
  /** One line per transition (off the live view). */
  verbose?: boolean;
  /** A summary line this often off a terminal (default 10 s; 0: none). */
  progressIntervalMs?: number;
}

/** What the ETA starts from: this strategy's durations so far, earlier runs' statistics, the sim latency. */
function estimateInputs(db: Db, type: string, extra: Record<string, unknown>): TrackerInputs {
  return { history: durationStats(db, type), observed: observedDurations(db), fallbackMs: simLatencyMidpoint(extra) };
}

export async function strategyApply(ctx: RunCtx, type?: StrategyType, opts: ApplyOptions = {}): Promise<Outcome> {
  const db = openDb(ctx.dbPath, { create: false });
  if (!db) strategyNotFound(type);
  const lock = new ApplyLock(db, ctx.dbPath);
  let locked = false;
  let driver: SimDriver | null = null;
  try {
    // Not found, or ended, before anything else: an ended strategy has no use for the lock.
    const first = theStrategy(db, type);
    const progress = makeProgress(process.stderr, {
      quiet: ctx.quiet,
      verbose: opts.verbose ?? false,
      intervalMs: opts.progressIntervalMs ?? 10_000,
      inputs: estimateInputs(db, first.type, first.extra),
    });
    // An unknown -c column is refused before anything runs (exit 2, nothing changed).
    ctx.checkResult?.(strategyShow(first));
    if (first.state !== 'initial' && !RESUMABLE.includes(first.state)) {
      throw new OperationError(`Strategy in state ${first.state} cannot be applied`);
    }
    const { tookOverFrom } = lock.acquire();
    locked = true;
    if (tookOverFrom) {
      progress.note(`took over the apply lock of pid ${tookOverFrom.pid} on ${tookOverFrom.host} (no longer running)`);
    }
    const s = theStrategy(db, type);
    if (s.state === 'initial') casStrategyState(db, ['initial'], 'applying');
    else if (RESUMABLE.includes(s.state)) progress.note(`resuming the ${s.type} strategy (state ${s.state})`);
    else throw new OperationError(`Strategy in state ${s.state} cannot be applied`);

    driver = new SimDriver(ctx.dbPath, simSettings(s.extra));
    const orchestrator = new Orchestrator(db, driver, progress, {
      type: s.type as StrategyType,
      states: statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null }),
      stopOnFailure: s.stop_on_failure,
      campaign: s.created_at,
      extra: s.extra,
      // A file whose strategy has no timeout stored gets the type's default, never NaN (which
      // setTimeout takes as 1 ms: every operation would time out).
      stateTimeoutMs: Number(s.extra.state_timeout_ms) || TYPES[s.type as StrategyType].defaultStateTimeoutMs,
      drainMs: drainMs(process.env.DCM_DRAIN_MS),
    });
    lock.startHeartbeat(() => {
      progress.warn('another process took the apply lock over: stopping');
      orchestrator.interrupt('SIGTERM');
    });
    const removeSignals = onSignals((signal) => orchestrator.interrupt(signal));
    let exitCode: number;
    try {
      exitCode = await orchestrator.run();
    } finally {
      removeSignals();
    }
    return { result: strategyShow(theStrategy(db)), exitCode };
  } finally {
    driver?.close();
    if (locked) lock.release();
    db.close();
  }
}

/**
 * `applying` → `abort requested`, for the running orchestrator to carry out. With no orchestrator
 * running, the abort is finished here: steps not started and steps caught mid-state are aborted.
 */
export async function strategyAbort(ctx: RunCtx, type?: StrategyType): Promise<Outcome> {
  const result = withExistingWriteDb(ctx, (db) => {
    const s = theStrategy(db, type);
    if (s.state !== 'applying') throw new OperationError(`Strategy in state ${s.state} cannot be aborted`);
    const holder = readLock(db);
    if (holder && holderAlive(holder)) {
      casStrategyState(db, ['applying'], 'abort requested');
    } else {
      // The lock of an orchestrator that died goes with the abort it will never carry out.
      if (holder) deleteLock(db, holder.pid, holder.host);
      interruptRunning(db, 'aborted while no orchestrator was running');
      abortInitialSteps(db);
      abortMidStateSteps(db);
      casStrategyState(db, ['applying'], 'aborted');
    }
    return strategyShow(getStrategy(db)!);
  });
  if (!result) strategyNotFound(type);
  return { result };
}
