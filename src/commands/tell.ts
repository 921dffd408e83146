/**
 * Notices a command tells itself (issue 49), when no apply runs to tell them: an abort carried out
 * with no orchestrator, and an orchestrator that `strategy status` finds dead. Each is recorded as
 * the apply's notices are (its event), and told to the strategy's `on_event` command once; a
 * command that fails is said on stderr, and never fails the command that told it.
 */
import { EVENTS } from '../domain/events.js';
import { STRATEGY_RUNNING } from '../domain/types.js';
import { noticeText, onEventOf, runOnEvent, type NoticeKind } from '../orchestrator/notify.js';
import { holderAlive } from '../orchestrator/lock.js';
import { whoAmI, type Actor } from '../platform/who.js';
import { hasEvent, recordEvent } from '../store/events.js';
import { readLock } from '../store/lock.js';
import { formatTimestamp } from '../domain/time.js';
import { nowMicros } from '../store/clock.js';
import type { ProcessRuntime } from '../platform/runtime.js';
import type { Strategy } from '../store/strategy.js';
import { getStrategy } from '../store/strategy.js';
import { runtimeOf, withExistingWriteDb, withReadDb, type Ctx } from './context.js';
import type { Db } from '../store/open.js';

/** Tell `on_event` (if the strategy has one) of an event just recorded; a warning when it failed. */
export async function tellOnEvent(rt: ProcessRuntime, s: Strategy, kind: NoticeKind, e: { event: string; details: string; reason: string | null }, who: Actor = whoAmI()): Promise<string | null> {
  const cmd = onEventOf(s.extra);
  if (!cmd) return null;
  const row = { ...e, at: formatTimestamp(nowMicros(rt.clock)), user: who.user, host: who.host, pid: who.pid };
  const problem = await runOnEvent(cmd, noticeText(kind, row, s), kind, rt.timers);
  return problem === null ? null : `notification failed: on_event for ${kind} (${row.at}): ${problem}`;
}

/**
 * `strategy status` on a strategy left running by an apply whose process is gone (a kill -9, a
 * host down): recorded once (`orchestrator dead`, keyed by the lock's holder) and told, when the
 * strategy has an `on_event`. A file `status` cannot write (a read-only folder) tells nothing.
 */
export async function tellDeadOrchestrator(ctx: Ctx): Promise<string | null> {
  // Read first: a status of a strategy with no on_event, or whose orchestrator lives, writes nothing.
  const dead = async (db: Db) => {
    const s = await getStrategy(db);
    if (!s || !STRATEGY_RUNNING.includes(s.state) || !onEventOf(s.extra)) return null;
    const lock = await readLock(db);
    if (!lock || holderAlive(lock, runtimeOf(ctx))) return null;
    const details = `pid ${lock.pid} on ${lock.host} (applying since ${lock.started_at}) is gone; the strategy was left ${s.state}: \`dcm strategy apply\` takes it up`;
    return (await hasEvent(db, EVENTS.orchestratorDead, details)) ? null : { s, details };
  };
  try {
    if (!(await withReadDb(ctx, null, dead))) return null;
    const found = await withExistingWriteDb(ctx, async (db) => {
      const d = await dead(db);
      if (d) await recordEvent(db, whoAmI(), EVENTS.orchestratorDead, d.details);
      return d;
    });
    if (!found) return null;
    return await tellOnEvent(runtimeOf(ctx), found.s, 'orchestrator dead', { event: EVENTS.orchestratorDead, details: found.details, reason: null });
  } catch {
    return null;
  }
}
