/**
 * `strategy-step resolve CLOUD --as ok|failed` on a file (one host): how a run left `running` by
 * an orchestrator that is gone ended, said by the operator, when nothing on this host can say it
 * (its processes are gone, its wrapper wrote no status: it was killed with it). Without it the next
 * apply runs the state again as the next attempt; an operator who knows the site did the state
 * (or failed it) says so, and the step moves as the orchestrator would have moved it. A strategy
 * left `aborting` for that run only ends `aborted` with it.
 *
 * Refused while an orchestrator runs (it watches the run), while a process of the run lives (it
 * has not ended: `strategy abort --now` stops it), and when its status is written (the next apply
 * takes that).
 */
import { decideReport } from '../domain/control.js';
import { OperationError } from '../domain/errors.js';
import { EVENTS } from '../domain/events.js';
import { layoutOf } from '../domain/logs.js';
import { statesOf, TYPES, type StrategyType } from '../domain/types.js';
import { leftRunStanding } from '../drivers/exec/stop-left.js';
import { whoAmI } from '../platform/who.js';
import { resolveLeftRun } from '../store/abort-now.js';
import { abortDeferredSteps } from '../store/deferrals.js';
import { recordEvent } from '../store/events.js';
import { leftRunning } from '../store/runs.js';
import { findStep } from '../store/steps.js';
import { casStrategyState } from '../store/strategy.js';
import { abortInitialSteps, abortMidStateSteps, completionSet } from '../store/transitions.js';
import { orchestratorOf } from './abort-now.js';
import { runToResolve } from './resolve.js';
import { runtimeOf, withExistingWriteDb, type RunCtx } from './context.js';
import type { Outcome } from './results.js';
import { strategyNotFound } from './strategy.js';

export async function resolveOnFile(ctx: RunCtx, cloud: string, as: 'ok' | 'failed', reason: string | null): Promise<Outcome> {
  const who = whoAmI();
  const notes: string[] = [];
  const row = await withExistingWriteDb(ctx, async (db) => {
    const { s, name, step, left } = await runToResolve(db, cloud);
    const run = `${left.state}, attempt ${left.attempt}`;
    const by = await orchestratorOf(db, runtimeOf(ctx));
    if (by) throw new OperationError(`${name}'s run (${run}) is watched by ${by}: its end comes from it`);
    const standing = leftRunStanding(layoutOf(s, ctx.dbPath), s.created_at, left);
    if ('pid' in standing) {
      throw new OperationError(`${name}'s run (${run}) is still going (pid ${standing.pid}): it has not ended; \`dcm strategy abort --now\` stops it, or wait for it`);
    }
    if ('status' in standing) throw new OperationError(`${name}'s run (${run}) has ended already (${standing.status}): the next apply takes that`);
    const type = s.type as StrategyType;
    const states = statesOf(type, s.extra as { cert_file?: string | null; exec_states?: unknown });
    const said = `resolved as ${as} by ${who.user}@${who.host}${reason ? `: ${reason}` : ''}`;
    const d = as === 'ok' ? decideReport(left.state, states, { kind: 'next' }, 0) : null;
    const to = d?.kind === 'advance' ? d.to : 'failed';
    const completes = to === 'complete' && type !== 'custom' ? completionSet(TYPES[type].endpoint) : null;
    const written = await resolveLeftRun(
      db,
      { historyId: left.historyId, stepId: left.stepId, subcloudId: step.subcloud_id, state: left.state },
      { outcome: as, runDetails: said, to, stepDetails: to === 'failed' ? `${left.state}: ${said}` : '', completes },
    );
    if (!written) throw new OperationError(`${name}'s run (${run}) was closed by another command meanwhile`);
    await recordEvent(db, who, EVENTS.runResolved, `${name}: ${run}: ${as}, said by the operator`, reason);
    // An abort that waited only for this run ends with it (another run left `running` may be resolved too).
    if (['abort requested', 'aborting'].includes(s.state) && (await leftRunning(db)).length === 0) {
      const n = await abortInitialSteps(db) + await abortDeferredSteps(db) + await abortMidStateSteps(db);
      await casStrategyState(db, ['abort requested', 'aborting'], 'aborted');
      await recordEvent(db, who, EVENTS.aborted, `${s.state} -> aborted: its last run was resolved; ${n} step(s) aborted`, reason);
      notes.push(`the strategy is aborted: nothing of it runs any more (${n} step(s) aborted)`);
    }
    return (await findStep(db, name))!;
  });
  if (!row) strategyNotFound();
  return { result: { kind: 'step', row }, notes };
}
