/** `dcm strategy abort [--now]` (SPEC §6; issue 49: an abort that ends). */
import { OperationError } from '../domain/errors.js';
import type { StrategyType } from '../domain/types.js';
import { casStrategyState, getStrategy, type Strategy } from '../store/strategy.js';
import { tellOnEvent } from './tell.js';
import { abortInitialSteps, abortMidStateSteps, interruptRunning } from '../store/transitions.js';
import { abortDeferredSteps } from '../store/deferrals.js';
import { releaseLock, readLock } from '../store/lock.js';
import { checkReason, EVENTS } from '../domain/events.js';
import { whoAmI } from '../platform/who.js';
import { recordEvent } from '../store/events.js';
import { runtimeOf, withExistingWriteDb } from './context.js';
import { strategyNotFound, theStrategy } from './strategy.js';
import { endedUnread, endedWarning, liveRuns, nameLive, resolveHint } from './live-runs.js';
import { abortNowAlone, orchestratorOf } from './abort-now.js';
import type { Outcome } from './results.js';
import type { RunCtx } from './context.js';

/** The states an abort takes: applying and paused; abort requested and aborting only to stop now, or with no orchestrator. */
const ABORTABLE = ['applying', 'paused'];
const ABORTING = ['abort requested', 'aborting'];

/**
 * `applying` → `abort requested`, for the running orchestrator to carry out. With no orchestrator
 * running, the abort is finished here: steps not started and steps caught mid-state are aborted,
 * except a step whose run still lives (dcm was killed, its run goes on): that run stays `running`
 * and the strategy `aborting`, for the next `apply` to adopt the run, wait for it and end the
 * abort; a later `abort` finishes what has ended meanwhile. Nothing is ever started beside a live
 * run (SPEC §7.2).
 *
 * `--now` stops the runs in flight rather than waiting for them, as a second Ctrl-C does: a
 * running orchestrator is asked (through the event it records, requests.ts), or with none, the
 * command stops them itself (abort-now.ts). Either way their steps end `aborted` with the reason.
 */
export async function strategyAbort(ctx: RunCtx, type?: StrategyType, reasonText?: string, opts: { now?: boolean } = {}): Promise<Outcome> {
  const reason = checkReason(reasonText);
  if (opts.now) return await abortNowCommand(ctx, type, reason);
  const warnings: string[] = [];
  let told = null as { s: Strategy; details: string } | null;
  const result = await withExistingWriteDb(ctx, async (db) => {
    const s = await theStrategy(db, type);
    const by = await orchestratorOf(db, runtimeOf(ctx));
    if (by && ABORTING.includes(s.state)) {
      throw new OperationError(`Strategy in state ${s.state} cannot be aborted: the runs in flight are waited for by ${by}; \`dcm strategy abort --now\` stops them`);
    }
    if (![...ABORTABLE, ...ABORTING].includes(s.state)) throw new OperationError(`Strategy in state ${s.state} cannot be aborted`);
    if (by) {
      await casStrategyState(db, ABORTABLE, 'abort requested');
      await recordEvent(db, whoAmI(), EVENTS.abortRequested, `${s.state} -> abort requested: ${by} carries it out`, reason);
    } else {
      // The lock of an orchestrator that died goes with the abort it will never carry out.
      const holder = await readLock(db);
      if (holder) await releaseLock(db, holder.token);
      const going = await liveRuns(db, s, ctx);
      // Runs that ended meanwhile with an end the next apply reads are left to it as live ones are.
      const ended = await endedUnread(db, s, ctx);
      const live = [...going, ...ended];
      await interruptRunning(db, 'aborted while no orchestrator was running', live.map((l) => l.left.historyId));
      // A deferred step ends as a live orchestrator's abort ends it, not as one caught mid-state.
      const n = await abortInitialSteps(db) + await abortDeferredSteps(db) + await abortMidStateSteps(db, live.map((l) => l.left.stepId));
      const to = live.length ? 'aborting' : 'aborted';
      await casStrategyState(db, [...ABORTABLE, ...ABORTING], to);
      const left = [going.length ? `${going.length} run(s) still going` : '', ended.length ? `${ended.length} run(s) ended unread` : ''].filter(Boolean).join(', ');
      const details = `${s.state} -> ${to} with no orchestrator running: ${n} step(s) aborted${left ? `; ${left} left for the next apply` : ''}`;
      await recordEvent(db, whoAmI(), EVENTS.aborted, details, reason);
      told = { s, details };
      if (going.length) {
        warnings.push(
          `still running, left for the next apply: ${nameLive(going)}; the strategy stays aborting: ` +
            `\`dcm strategy apply\` waits for it and ends the abort, \`dcm strategy abort --now\` stops it${resolveHint(going)}`,
        );
      }
      if (ended.length) warnings.push(endedWarning(ended));
    }
    return { kind: 'strategy' as const, strategy: (await getStrategy(db))! };
  });
  if (!result) strategyNotFound(type);
  // No orchestrator to tell it: this command tells on_event (commands/tell.ts).
  const failed = told && (await tellOnEvent(runtimeOf(ctx), told.s, 'abort', { event: EVENTS.aborted, details: told.details, reason }));
  if (failed) warnings.push(failed);
  return { result, warnings };
}

/**
 * `--now`: with an orchestrator running, the abort (if not requested yet) and the event that asks
 * it to stop its runs, in one transaction; it sees them within a second. With none, this command
 * stops the runs (abort-now.ts).
 */
async function abortNowCommand(ctx: RunCtx, type: StrategyType | undefined, reason: string | null): Promise<Outcome> {
  const asked = await withExistingWriteDb(ctx, async (db) => {
    const s = await theStrategy(db, type);
    if (![...ABORTABLE, ...ABORTING].includes(s.state)) throw new OperationError(`Strategy in state ${s.state} cannot be aborted`);
    const by = await orchestratorOf(db, runtimeOf(ctx));
    if (!by) return { by: null };
    await casStrategyState(db, ABORTABLE, 'abort requested');
    await recordEvent(db, whoAmI(), EVENTS.abortNow, `${s.state} -> abort now: ${by} stops the runs in flight`, reason);
    return { result: { kind: 'strategy' as const, strategy: (await getStrategy(db))! }, by };
  });
  if (!asked) strategyNotFound(type);
  if (asked.by === null) return await abortNowAlone(ctx, type, reason);
  return {
    result: asked.result,
    notes: [`abort now: ${asked.by} stops the runs in flight (SIGTERM, then SIGKILL after their kill grace); \`dcm strategy status --watch\` follows it to its end`],
  };
}
