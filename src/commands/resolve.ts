/**
 * `dcm strategy-step resolve CLOUD --as ok|failed [--reason TEXT]` (README "Several hosts"): how a
 * run ended, said by the operator for a host that cannot say it any more.
 *
 * A run started on a host that went down with its launcher never writes its end to the store. A
 * worker that took it over waits until it cannot be going any more (its state's timeout and
 * grace: an hour and more by default), the step holds its window slot meanwhile, and `retry` and
 * `delete` refuse while it may go. An operator who knows how it ended (the site says so) writes
 * that end in its host's stead, fenced by the run's id: the worker waiting for it, or the next
 * apply, takes it as it would have taken the launcher's, and the state is not run again for it.
 * The first end written wins: a launcher that comes back later cannot change it.
 *
 * Refused where the run's end can still come from its host (a worker of that host is live). On a
 * file (one host), resolve-file.ts: for a run whose processes are gone and that left no status.
 */
import { OperationError } from '../domain/errors.js';
import { checkReason, EVENTS } from '../domain/events.js';
import { runIdOf } from '../drivers/exec/run-id.js';
import { liveWorkers } from '../orchestrator/workers.js';
import { whoAmI, type Actor } from '../platform/who.js';
import { recordEvent } from '../store/events.js';
import { leftRunning, resolveRun, retryRun, runClaim, runEnd, unknownRuns, type LeftRunRow } from '../store/runs.js';
import type { Db } from '../store/open.js';
import { findStep } from '../store/steps.js';
import { getStrategy } from '../store/strategy.js';
import { subcloudNameOf } from '../store/subclouds.js';
import { runtimeOf, sharedStore, withExistingWriteDb, type RunCtx } from './context.js';
import type { Outcome } from './results.js';
import { strategyNotFound } from './strategy.js';
import type { Strategy } from '../store/strategy.js';

export type ResolveAs = 'ok' | 'failed';

/**
 * The strategy, the subcloud's name, its step and the run it has going: what resolve is about, on
 * a server or a file alike; refused, saying why, when there is none of them.
 */
export async function runToResolve(db: Db, cloud: string): Promise<{ s: Strategy; name: string; step: NonNullable<Awaited<ReturnType<typeof findStep>>>; left: LeftRunRow }> {
  const s = await getStrategy(db);
  if (!s) strategyNotFound();
  if (s.extra.driver !== 'exec') throw new OperationError(`strategy-step resolve is for the exec driver's runs: this strategy's driver is ${String(s.extra.driver ?? 'sim')}`);
  const name = await subcloudNameOf(db, cloud);
  const step = await findStep(db, name);
  if (!step) throw new OperationError(`Strategy step for subcloud ${cloud} not found`);
  const left = (await leftRunning(db)).find((l) => l.cloud === name);
  if (!left) throw new OperationError(`${name} has no run going (its step is ${step.state}): nothing to resolve`);
  return { s, name, step, left };
}

export async function stepResolve(ctx: RunCtx, cloud: string, as: ResolveAs, reasonText?: string): Promise<Outcome> {
  const reason = checkReason(reasonText);
  // One host: the run's own files and processes say whether it ended (resolve-file.ts).
  if (!sharedStore(ctx)) return await (await import('./resolve-file.js')).resolveOnFile(ctx, cloud, as, reason);
  const who = whoAmI();
  const row = await withExistingWriteDb(ctx, async (db) => {
    const { s, name, left } = await runToResolve(db, cloud);
    const run = `${left.state}, attempt ${left.attempt}, on ${left.host ?? 'an unknown host'}`;
    const watcher = left.host === null ? undefined : (await liveWorkers(db, runtimeOf(ctx))).find((w) => w.host === left.host);
    if (watcher) throw new OperationError(`${name}'s run (${run}) is watched by a live worker there (pid ${watcher.pid}): its end comes from it`);
    const runId = runIdOf({ campaign: s.created_at, cloud: name, state: left.state, attempt: left.attempt });
    // Committed by its worker, never handed to its launcher (it stopped first): it never ran, and
    // the next look at it gives it up to run again. Nothing to say of its end.
    if ((await runClaim(db, runId))?.what !== 'started') throw new OperationError(`${name}'s run (${run}) was never started there (its worker stopped first): the next apply runs it again`);
    const known = await runEnd(db, runId);
    if (known) throw new OperationError(`${name}'s run (${run}) has ended already (${known.code === null ? `killed by ${known.signal ?? 'a signal'}` : `exit ${known.code}`}, said by ${known.host}): the next look at it takes that`);
    // Its launcher writes outside the writers' lock: its end may land between the look and this.
    const said = await resolveRun(db, runId, byOf(who), as === 'ok' ? 0 : 1, as === 'ok' ? '' : `resolved as failed by ${who.user}${reason ? `: ${reason}` : ''}`);
    if (!said) throw new OperationError(`${name}'s run (${run}) has ended already, said by its host just now: the next look at it takes that`);
    await recordEvent(db, who, EVENTS.runResolved, `${name}: ${run}: ${as}, said by the operator`, reason);
    return (await findStep(db, name))!;
  });
  if (!row) strategyNotFound();
  return { result: { kind: 'step', row } };
}

/**
 * `strategy retry` where runs are of unknown outcome (store/runs.ts: their host is gone, their
 * state has no timeout): each of them, or each of the named clouds', runs again as the next
 * attempt. The operator's word is written as the run's end, fenced by its id: the worker holding
 * it takes it at its next look, or the next apply does. Null: no such run is named (or none is
 * held), and `retry` does what it does for failed and aborted steps.
 */
export async function retryUnknownRuns(db: Db, s: Strategy, named: readonly string[] | null, reason: string | null): Promise<string[] | null> {
  const held = await unknownRuns(db);
  if (held.size === 0) return null;
  const runs = (await leftRunning(db)).filter((l) => held.has(l.historyId) && (named === null || named.includes(l.cloud)));
  if (runs.length === 0) return null;
  if (named && runs.length < named.length) {
    const others = named.filter((c) => !runs.some((l) => l.cloud === c));
    throw new OperationError(`${others.join(', ')}: no run of unknown outcome; retry ${runs.length === 1 ? 'the one' : 'those'} of ${runs.map((l) => l.cloud).join(', ')} apart`);
  }
  const who = whoAmI();
  const again: string[] = [];
  for (const l of runs) {
    const runId = runIdOf({ campaign: s.created_at, cloud: l.cloud, state: l.state, attempt: l.attempt });
    if (await retryRun(db, runId, byOf(who))) again.push(`${l.cloud}: ${l.state}, attempt ${l.attempt}, on ${l.host ?? 'an unknown host'}`);
  }
  if (again.length === 0) throw new OperationError('Nothing to retry: the runs of unknown outcome have ended meanwhile, said by their host');
  await recordEvent(db, who, EVENTS.retried, `${again.length} run(s) of unknown outcome run again: ${again.join('; ')}`, reason);
  return [`retry runs again ${again.length} run${again.length === 1 ? '' : 's'} of unknown outcome (the worker holding each, or the next apply, starts the next attempt):`, ...again.map((a) => `  ${a}`)];
}

/** Who wrote the end, where its host would be (after `operator `): `alice@host-c`. */
const byOf = (who: Actor) => `${who.user}@${who.host}`;
