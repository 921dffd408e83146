/** `dcm strategy abort` (SPEC §6). */
import { OperationError } from '../domain/errors.js';
import type { StrategyType } from '../domain/types.js';
import { casStrategyState, getStrategy } from '../store/strategy.js';
import { abortInitialSteps, abortMidStateSteps, interruptRunning } from '../store/transitions.js';
import { abortDeferredSteps } from '../store/deferrals.js';
import { releaseLock, readLock } from '../store/lock.js';
import { holderAlive } from '../orchestrator/lock.js';
import { liveWorkers } from '../orchestrator/workers.js';
import { checkReason, EVENTS } from '../domain/events.js';
import { whoAmI } from '../platform/who.js';
import { recordEvent } from '../store/events.js';
import { runtimeOf, withExistingWriteDb } from './context.js';
import { strategyNotFound, theStrategy } from './strategy.js';
import { liveRuns, nameLive, resolveHint } from './live-runs.js';
import type { Outcome } from './results.js';
import type { RunCtx } from './context.js';

/**
 * `applying` → `abort requested`, for the running orchestrator to carry out. With no orchestrator
 * running, the abort is finished here: steps not started and steps caught mid-state are aborted,
 * except a step whose run still lives (dcm was killed, its run goes on): that run stays `running`
 * and the strategy `aborting`, for the next `apply` to adopt the run, wait for it and end the
 * abort. Nothing is ever started beside a live run (SPEC §7.2).
 */
export async function strategyAbort(ctx: RunCtx, type?: StrategyType, reasonText?: string): Promise<Outcome> {
  const reason = checkReason(reasonText);
  const warnings: string[] = [];
  const result = await withExistingWriteDb(ctx, async (db) => {
    const s = await theStrategy(db, type);
    const holder = await readLock(db);
    // On a PostgreSQL store the strategy's workers (orchestrator/workers.ts) carry an abort out.
    const rt = runtimeOf(ctx);
    const workers = await liveWorkers(db, rt);
    const running = (holder !== undefined && holderAlive(holder, rt)) || workers.length > 0;
    // A paused strategy is aborted as an applying one is (SPEC §4 "Control while applying"); one
    // left aborting by an abort that had to leave a live run is finished by a later abort.
    const abortable = ['applying', 'paused'];
    if (!abortable.includes(s.state)) throw new OperationError(`Strategy in state ${s.state} cannot be aborted`);
    if (running) {
      await casStrategyState(db, abortable, 'abort requested');
      const by = workers.length
        ? `its ${workers.length} worker(s) (${workers.map((w) => `pid ${w.pid} on ${w.host}`).join(', ')}) carry it out`
        : `the orchestrator (pid ${holder!.pid} on ${holder!.host}) carries it out`;
      await recordEvent(db, whoAmI(), EVENTS.abortRequested, `${s.state} -> abort requested: ${by}`, reason);
    } else {
      // The lock of an orchestrator that died goes with the abort it will never carry out.
      if (holder) await releaseLock(db, holder.token);
      const live = await liveRuns(db, s, ctx);
      await interruptRunning(db, 'aborted while no orchestrator was running', live.map((l) => l.left.historyId));
      // A deferred step ends as a live orchestrator's abort ends it, not as one caught mid-state.
      const n = await abortInitialSteps(db) + await abortDeferredSteps(db) + await abortMidStateSteps(db, live.map((l) => l.left.stepId));
      const to = live.length ? 'aborting' : 'aborted';
      await casStrategyState(db, abortable, to);
      await recordEvent(
        db,
        whoAmI(),
        EVENTS.aborted,
        `${s.state} -> ${to} with no orchestrator running: ${n} step(s) aborted${live.length ? `; ${live.length} run(s) still going left for the next apply` : ''}`,
        reason,
      );
      if (live.length) {
        warnings.push(
          `still running, left for the next apply: ${nameLive(live)}; the strategy stays aborting: ` +
            `\`dcm strategy apply\` waits for it and ends the abort${resolveHint(live)}`,
        );
      }
    }
    return { kind: 'strategy' as const, strategy: (await getStrategy(db))! };
  });
  if (!result) strategyNotFound(type);
  return { result, warnings };
}
