/** `dcm strategy apply` and `dcm strategy abort`. */
import { OperationError } from '../domain/errors.js';
import { statesOf, TYPES, type StrategyType } from '../domain/types.js';
import { openDb } from '../store/open.js';
import { casStrategyState, getStrategy } from '../store/strategy.js';
import { abortInitialSteps, abortMidStateSteps, interruptRunning } from '../store/transitions.js';
import { deleteLock, readLock } from '../store/lock.js';
import { createDriver } from '../drivers/index.js';
import type { Driver } from '../drivers/driver.js';
import { withExistingWriteDb } from '../commands/context.js';
import { strategyNotFound, theStrategy } from '../commands/strategy.js';
import { strategyShow } from '../commands/views.js';
import type { Outcome, RunCtx } from '../cli/runner.js';
import { ApplyLock, holderAlive } from './lock.js';
import { Orchestrator } from './orchestrator.js';
import { LineProgress } from './progress.js';
import { onSignals } from './signals.js';

const RESUMABLE = ['applying', 'abort requested', 'aborting'];

/** `$DCM_DRAIN_MS`: how long a first Ctrl-C waits (default 60 s); anything but a number is ignored. */
function drainMs(text: string | undefined): number | undefined {
  const ms = Number(text);
  return text && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

export async function strategyApply(ctx: RunCtx, type?: StrategyType): Promise<Outcome> {
  const db = openDb(ctx.dbPath, { create: false });
  if (!db) strategyNotFound(type);
  const lock = new ApplyLock(db, ctx.dbPath);
  let locked = false;
  let driver: Driver | null = null;
  const progress = new LineProgress(process.stderr, ctx.quiet);
  try {
    // Not found, or ended, before anything else: an ended strategy has no use for the lock.
    const first = theStrategy(db, type);
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

    driver = await createDriver(ctx.dbPath, s.extra);
    const orchestrator = new Orchestrator(db, driver, progress, {
      type: s.type as StrategyType,
      states: statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null; exec_states?: unknown }),
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
    // Waits until every process the driver started is gone: dcm never leaves one behind.
    await driver?.close();
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
