/**
 * `strategy abort --now` with no orchestrator running (it was killed, or the host is gone): this
 * command stops the runs still going itself, as a second Ctrl-C of a live apply would, and ends
 * the abort. In three steps, each its own transaction, so that the stop (seconds: the kill grace)
 * holds no lock on the store:
 *   1. the strategy `aborting` and the `abort now` event: an apply started meanwhile takes the
 *      abort up, sees the abort now, and stops the same runs (orchestrator.ts);
 *   2. each run's processes stopped, by its DCM_RUN_ID (drivers/exec/stop-left.ts);
 *   3. the runs stopped closed and their steps aborted with the operator's words, the rest as a
 *      plain abort does; `aborted` unless a run could not be stopped (another host's).
 */
import { OperationError } from '../domain/errors.js';
import type { StrategyType } from '../domain/types.js';
import { abortNowText, EVENTS } from '../domain/events.js';
import { layoutOf } from '../domain/logs.js';
import { casStrategyState, getStrategy, type Strategy } from '../store/strategy.js';
import { abortInitialSteps, abortMidStateSteps, interruptRunning } from '../store/transitions.js';
import { abortDeferredSteps } from '../store/deferrals.js';
import { abortStoppedRuns } from '../store/abort-now.js';
import { releaseLock, readLock } from '../store/lock.js';
import { recordEvent } from '../store/events.js';
import { whoAmI } from '../platform/who.js';
import { execConfigOf } from '../drivers/exec/options.js';
import { stopLeftRun } from '../drivers/exec/stop-left.js';
import { runtimeOf, withExistingWriteDb, type RunCtx } from './context.js';
import type { ProcessRuntime } from '../platform/runtime.js';
import { strategyNotFound, theStrategy } from './strategy.js';
import { endedUnread, endedWarning, liveRuns, nameLive, resolveHint, type LiveRun } from './live-runs.js';
import { holderAlive } from '../orchestrator/lock.js';
import { liveWorkers } from '../orchestrator/workers.js';
import type { Db } from '../store/open.js';
import type { Outcome } from './results.js';
import { tellOnEvent } from './tell.js';

/** Who carries an abort out, if anyone: the orchestrator holding the lock, or the strategy's live workers (PostgreSQL). */
export async function orchestratorOf(db: Db, rt: ProcessRuntime): Promise<string | null> {
  const holder = await readLock(db);
  const workers = await liveWorkers(db, rt);
  if (workers.length) return `its ${workers.length} worker(s) (${workers.map((w) => `pid ${w.pid} on ${w.host}`).join(', ')})`;
  return holder !== undefined && holderAlive(holder, rt) ? `the orchestrator (pid ${holder.pid} on ${holder.host})` : null;
}

const ABORTS_FROM = ['applying', 'paused', 'abort requested', 'aborting'];

/** The kill grace of the run's state (the exec config's), 10 s when it cannot be told. */
function graceOf(s: Strategy, state: string): number {
  try {
    return execConfigOf(s.extra).states.find((x) => x.state === state)?.killGraceMs ?? 10_000;
  } catch {
    return 10_000;
  }
}

/** Stop the runs of this host; the ones whose processes are all gone. */
async function stopRuns(s: Strategy, dbPath: string, live: readonly LiveRun[]): Promise<LiveRun[]> {
  if (s.extra.driver !== 'exec') return [];
  const logs = layoutOf(s, dbPath);
  const gone = await Promise.all(live.map((l) => stopLeftRun(logs, s.created_at, l.left, graceOf(s, l.left.state))));
  return live.filter((_, i) => gone[i]);
}

export async function abortNowAlone(ctx: RunCtx, type: StrategyType | undefined, reason: string | null): Promise<Outcome> {
  const who = whoAmI();
  const text = abortNowText({ user: who.user, host: who.host, reason });
  const first = await withExistingWriteDb(ctx, async (db) => {
    const s = await theStrategy(db, type);
    if (!ABORTS_FROM.includes(s.state)) throw new OperationError(`Strategy in state ${s.state} cannot be aborted`);
    const by = await orchestratorOf(db, runtimeOf(ctx));
    if (by) {
      // An apply started since the first look: it is asked, as when it ran from the start.
      await casStrategyState(db, ['applying', 'paused'], 'abort requested');
      await recordEvent(db, who, EVENTS.abortNow, `${s.state} -> abort now: ${by} stops the runs in flight`, reason);
      return { by, s };
    }
    // The lock of an orchestrator that died goes with the abort it will never carry out.
    const holder = await readLock(db);
    if (holder) await releaseLock(db, holder.token);
    await casStrategyState(db, ABORTS_FROM, 'aborting');
    await recordEvent(db, who, EVENTS.abortNow, `${s.state} -> aborting: no orchestrator running, this command stops the runs still going`, reason);
    return { by: null, s, live: await liveRuns(db, s, ctx) };
  });
  if (!first) strategyNotFound(type);
  if (first.by !== null) {
    return { result: { kind: 'strategy', strategy: first.s }, notes: [`abort now: ${first.by} stops the runs in flight`] };
  }
  const here = first.live.filter((l) => !l.elsewhere);
  const stopped = await stopRuns(first.s, ctx.dbPath, here);
  const notes: string[] = [];
  const warnings: string[] = [];
  let told = null as string | null;
  if (stopped.length) notes.push(`abort now: stopped ${stopped.length} run(s): ${nameLive(stopped)}`);
  const result = await withExistingWriteDb(ctx, async (db) => {
    const s = await theStrategy(db, type);
    const by = await orchestratorOf(db, runtimeOf(ctx));
    if (by) {
      // An apply took the abort up meanwhile: it finishes it, stopping what is left.
      notes.push(`${by} took the abort up meanwhile and finishes it`);
      return { kind: 'strategy' as const, strategy: s };
    }
    // Still going (not stopped from here), or ended by themselves (also just before the stop) with
    // an end the next apply reads: a run that ended ok at its site is never recorded as cut off.
    const going = await liveRuns(db, s, ctx);
    const ended = await endedUnread(db, s, ctx);
    const still = [...going, ...ended];
    const live = new Set(still.map((l) => l.left.historyId));
    const n0 = await abortStoppedRuns(db, stopped.filter((l) => !live.has(l.left.historyId)).map((l) => l.left), text);
    await interruptRunning(db, 'aborted while no orchestrator was running', [...live]);
    const n = n0 + await abortInitialSteps(db) + await abortDeferredSteps(db) + await abortMidStateSteps(db, still.map((l) => l.left.stepId));
    const to = still.length ? 'aborting' : 'aborted';
    await casStrategyState(db, ABORTS_FROM, to);
    const left = [going.length ? `${going.length} run(s) could not be stopped from here` : '', ended.length ? `${ended.length} run(s) ended unread, left for the next apply` : ''].filter(Boolean).join(', ');
    const details = `aborting -> ${to} with no orchestrator running: ${n} step(s) aborted, ${n0} of them stopped now${left ? `; ${left}` : ''}`;
    await recordEvent(db, who, EVENTS.aborted, details, reason);
    told = details;
    if (going.length) {
      warnings.push(`could not be stopped from here: ${nameLive(going)}; the strategy stays aborting: \`dcm strategy abort --now\` again, or \`dcm strategy apply\` ends the abort once they end${resolveHint(going)}`);
    }
    if (ended.length) warnings.push(endedWarning(ended));
    return { kind: 'strategy' as const, strategy: (await getStrategy(db))! };
  });
  if (!result) strategyNotFound(type);
  // No orchestrator to tell it: this command tells on_event (commands/tell.ts).
  const failed = told && (await tellOnEvent(runtimeOf(ctx), first.s, 'abort', { event: EVENTS.aborted, details: told, reason }, who));
  if (failed) warnings.push(failed);
  return { result, notes, warnings };
}

/**
 * `strategy delete` of a strategy left `aborting` (or `abort requested`) by an orchestrator that is
 * gone, once none of its runs lives (the caller refused already if one does): its runs left
 * `running` are closed, and it may be deleted as an ended one. True: it may.
 */
export async function abortLeftBehind(db: Db, s: Strategy, rt: ProcessRuntime): Promise<boolean> {
  if (!['abort requested', 'aborting'].includes(s.state) || (await orchestratorOf(db, rt))) return false;
  await interruptRunning(db, 'closed by strategy delete: its abort had no orchestrator to end it');
  return true;
}
