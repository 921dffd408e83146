/**
 * `dcm strategy pause|resume|update|retry` (SPEC §4 "Control while applying"). Each is one write
 * to the file; a running orchestrator notices it by `PRAGMA data_version` within a second and acts.
 */
import { OperationError, UsageError } from '../domain/errors.js';
import {
  formatMaxFailures,
  parseMaxFailures,
  PAUSABLE,
  RESUMABLE_BY_OPERATOR,
  RETRYABLE,
  retryTarget,
  stagesToResize,
  UPDATABLE,
} from '../domain/control.js';
import { maxParallelRefusal } from '../domain/planning.js';
import { changeText, checkReason, EVENTS, MAX_PARALLEL_NAME, stageWindowName, type EventName } from '../domain/events.js';
import { whoAmI } from '../platform/who.js';
import { recordEvent } from '../store/events.js';
import { statesOf, type StrategyType } from '../domain/types.js';
import {
  casStrategyState,
  getStrategy,
  setMaxFailures,
  setStageWindows,
  setStrategyMaxParallel,
  stageWindows,
  touchStrategy,
} from '../store/strategy.js';
import { resetStep, retryCandidates, stepStatesOf } from '../store/steps.js';
import { findSubcloud } from '../store/subclouds.js';
import { immediate, withExistingWriteDb, type Ctx } from './context.js';
import type { CommandResult, Outcome } from './results.js';
import { strategyNotFound, theStrategy } from './strategy.js';
import { liveRuns, refuseWhileLive, waitForLiveRuns } from './live-runs.js';
import { retryUnknownRuns } from './resolve.js';
import type { Db } from '../store/open.js';
import { formatStageGate, formatStageMaxFailures, parseStageGate, parseStageMaxFailures, PENDING_GATES } from '../domain/stage-gates.js';
import { listStageGates, reopenGates, setStageGates } from '../store/stage-gates.js';
import { formatStartRate, parseStartRateOptions, readStoredRate, storeStartRate, type StartRate } from '../domain/start-rate.js';
import { setStageRates, stageRates } from '../store/start-rate.js';

/** Move the strategy from one of `from` to `to`, or say it cannot be `verb`ed. */
async function moveState(ctx: Ctx, type: StrategyType | undefined, from: readonly string[], to: string, verb: string, event: EventName, reasonText?: string): Promise<CommandResult> {
  const reason = checkReason(reasonText);
  const result = await withExistingWriteDb(ctx, async (db) =>
    await immediate(db, async (tx) => {
      const s = await theStrategy(tx, type);
      if (!from.includes(s.state) || !await casStrategyState(tx, from, to)) {
        throw new OperationError(`Strategy in state ${s.state} cannot be ${verb}`);
      }
      await recordEvent(tx, whoAmI(), event, `${s.state} -> ${to}`, reason);
      return { kind: 'strategy' as const, strategy: (await getStrategy(tx))! };
    }),
  );
  return result ?? strategyNotFound(type);
}

/** `applying` → `paused`: the orchestrator starts no new subcloud; those in flight run to their end. */
export async function strategyPause(ctx: Ctx, type?: StrategyType, reason?: string): Promise<CommandResult> {
  return await moveState(ctx, type, PAUSABLE, 'paused', 'paused', EVENTS.paused, reason);
}

/** `paused` → `applying`: the orchestrator goes on (or `apply` does, if none is running). */
export async function strategyResume(ctx: Ctx, type?: StrategyType, reason?: string): Promise<CommandResult> {
  return await moveState(ctx, type, RESUMABLE_BY_OPERATOR, 'applying', 'resumed', EVENTS.resumed, reason);
}

export interface UpdateInput {
  maxParallelSubclouds?: number;
  stage?: number;
  maxFailures?: string;
  /** Stage gates (README "Stage gates"): of stage K, or of every stage not ended. */
  stageMaxFailures?: string;
  stageGate?: string;
  gateCheck?: string;
  /** `--reason TEXT`: why, in the event record. */
  reason?: string;
  /** `--start-rate N/min|none`, `--ramp F`, `--ramp-after K` (domain/start-rate.ts). */
  startRate?: string;
  ramp?: string;
  rampAfter?: string;
}

/**
 * `strategy update`: the windows and the failure budget of an initial, applying or paused strategy.
 * A stage that has ended keeps the window it ran with (domain `stagesToResize`); what was kept, and
 * a single stage's new window (the record's max parallel subclouds is every stage's), go to stderr.
 */
export async function strategyUpdate(ctx: Ctx, type: StrategyType | undefined, input: UpdateInput): Promise<Outcome> {
  // Option values on their own first, before the file is read (SPEC §5).
  const gates = stageGateUpdate(input);
  const reason = checkReason(input.reason);
  const rate = parseStartRateOptions(input, true);
  if (input.stage !== undefined && input.maxParallelSubclouds === undefined && !gates && rate === undefined) {
    throw new UsageError('--stage needs --max-parallel-subclouds, --start-rate, --stage-max-failures, --stage-gate or --gate-check');
  }
  if (input.maxParallelSubclouds === undefined && input.maxFailures === undefined && !gates && rate === undefined) {
    throw new UsageError('give --max-parallel-subclouds N (with --stage K for one stage), --start-rate N/min or --max-failures N|P%');
  }
  if (input.stage !== undefined && input.stage < 1) throw new UsageError(`invalid --stage '${input.stage}': stages are 1, 2, 3, ...`);
  // dcm's own command: a value out of any type's range is a usage error (the type's own, below).
  const refused = input.maxParallelSubclouds === undefined ? null : maxParallelRefusal('patch', input.maxParallelSubclouds);
  if (refused) throw new UsageError(refused);
  const budget = input.maxFailures === undefined ? undefined : formatMaxFailures(parseMaxFailures(input.maxFailures));

  const result = await withExistingWriteDb(ctx, async (db) =>
    (await immediate(db, async (tx) => {
      const s = await theStrategy(tx, type);
      if (!UPDATABLE.includes(s.state)) throw new OperationError(`Strategy in state ${s.state} cannot be updated`);
      const notes: string[] = [];
      // Old -> new, for the event record.
      const changes: { name: string; from: string | number | null; to: string | number | null }[] = [];
      const window = input.maxParallelSubclouds;
      if (window !== undefined) {
        // The type's own limit (prestage: 250).
        const refusal = maxParallelRefusal(s.type as StrategyType, window, Boolean(s.extra.with_prestage));
        if (refusal) throw new UsageError(refusal);
        const stages = await stageWindows(tx);
        if (input.stage !== undefined && !stages.some((st) => st.stage === input.stage)) {
          const n = stages.length;
          throw new OperationError(`Strategy has no stage ${input.stage} (it has ${n === 1 ? 'stage 1' : `stages 1 to ${n}`})`);
        }
        const { resize, kept } = stagesToResize(stages, input.stage);
        await setStageWindows(tx, window, resize);
        if (input.stage === undefined) changes.push({ name: MAX_PARALLEL_NAME, from: s.max_parallel_subclouds, to: window });
        for (const st of stages) if (resize.includes(st.stage)) changes.push({ name: stageWindowName(st.stage), from: st.window, to: window });
        if (input.stage === undefined) await setStrategyMaxParallel(tx, window);
        else notes.push(`stage ${input.stage} now runs ${window} at a time; the other stages keep their windows`);
        for (const k of kept) notes.push(`stage ${k.stage} has ended and keeps the window it ran with (${k.window})`);
      }
      if (rate !== undefined) await updateStartRates(tx, input.stage, rate, changes, notes);
      if (budget !== undefined) {
        changes.push({ name: 'max failures', from: s.max_failures, to: budget });
        await setMaxFailures(tx, budget);
      }
      if (gates) await updateStageGates(tx, input.stage, gates, changes, notes);
      await touchStrategy(tx);
      await recordEvent(tx, whoAmI(), EVENTS.updated, changeText(changes), reason);
      return { result: { kind: 'strategy' as const, strategy: (await getStrategy(tx))! }, notes };
    })),
  );
  return result ?? strategyNotFound(type);
}

/**
 * Stage K's start rate, or that of every stage not ended (an ended stage keeps what it ran with,
 * as its window does). A running apply spaces its next start from its last one by the new rate.
 */
async function updateStartRates(
  db: Db,
  stage: number | undefined,
  rate: StartRate | null,
  changes: { name: string; from: string | number | null; to: string | number | null }[],
  notes: string[],
): Promise<void> {
  const stages = await stageWindows(db);
  if (stage !== undefined && !stages.some((st) => st.stage === stage)) {
    const n = stages.length;
    throw new OperationError(`Strategy has no stage ${stage} (it has ${n === 1 ? 'stage 1' : `stages 1 to ${n}`})`);
  }
  if (stage !== undefined && stages.find((st) => st.stage === stage)?.ended) throw new OperationError(`Stage ${stage} has ended and cannot be updated`);
  const to = stage === undefined ? stages.filter((st) => !st.ended).map((st) => st.stage) : [stage];
  const before = await stageRates(db);
  await setStageRates(db, to, storeStartRate(rate));
  const shown = (r: StartRate | null) => (r ? formatStartRate(r) : 'none');
  for (const st of to) changes.push({ name: `stage ${st} start rate`, from: shown(readStoredRate(before.get(st))), to: shown(rate) });
  if (stage === undefined) for (const st of stages) if (st.ended) notes.push(`stage ${st.stage} has ended and keeps its start rate`);
}

/** The stage gate options of an update, checked on their own; undefined when none was given. */
function stageGateUpdate(input: UpdateInput): { maxFailures?: string; gate?: string; gateCheck?: string } | undefined {
  if (input.stageMaxFailures === undefined && input.stageGate === undefined && input.gateCheck === undefined) return undefined;
  if (input.gateCheck !== undefined && input.gateCheck.trim() === '') throw new UsageError("option '--gate-check' is empty: give a command");
  return {
    maxFailures: input.stageMaxFailures === undefined ? undefined : formatStageMaxFailures(parseStageMaxFailures(input.stageMaxFailures)),
    gate: input.stageGate === undefined ? undefined : formatStageGate(parseStageGate(input.stageGate)),
    gateCheck: input.gateCheck,
  };
}

/**
 * Stage K's gate options, or those of every stage not ended (an ended stage keeps what it ran
 * with, as its window does); a stage left with `check` and no command is refused.
 */
async function updateStageGates(
  db: Db,
  stage: number | undefined,
  gates: { maxFailures?: string; gate?: string; gateCheck?: string },
  changes: { name: string; from: string | number | null; to: string | number | null }[],
  notes: string[],
): Promise<void> {
  const windows = await stageWindows(db);
  if (stage !== undefined && !windows.some((st) => st.stage === stage)) {
    const n = windows.length;
    throw new OperationError(`Strategy has no stage ${stage} (it has ${n === 1 ? 'stage 1' : `stages 1 to ${n}`})`);
  }
  const all = await listStageGates(db);
  // A stage whose steps have ended but whose gate is still going (a soak, a check, a pause) can be
  // changed: its gate is what the update is for.
  const atGate = new Set(all.filter((g) => g.gate_state !== null && PENDING_GATES.includes(g.gate_state)).map((g) => g.stage));
  const ended = new Set(windows.filter((w) => w.ended && !atGate.has(w.stage)).map((w) => w.stage));
  if (stage !== undefined && ended.has(stage)) throw new OperationError(`Stage ${stage} has ended and cannot be updated`);
  const rows = all.filter((g) => (stage === undefined ? !ended.has(g.stage) : g.stage === stage));
  for (const g of rows) {
    if ((gates.gate ?? g.gate) === 'check' && (gates.gateCheck ?? g.gate_check) === null) {
      throw new UsageError('--stage-gate check needs a command: --gate-check CMD, or gate_check in the exec config');
    }
  }
  await setStageGates(db, rows.map((g) => g.stage), gates);
  for (const g of rows) {
    if (gates.maxFailures !== undefined) changes.push({ name: `stage ${g.stage} max failures`, from: g.max_failures, to: gates.maxFailures });
    if (gates.gate !== undefined) changes.push({ name: `stage ${g.stage} gate`, from: g.gate, to: gates.gate });
    if (gates.gateCheck !== undefined) changes.push({ name: `stage ${g.stage} gate check`, from: g.gate_check, to: gates.gateCheck });
  }
  if (stage === undefined) for (const k of ended) notes.push(`stage ${k} has ended and keeps its gate`);
}

export interface RetryInput {
  clouds: string[];
  failed?: boolean;
  aborted?: boolean;
  /** Wait while a run of the strategy still lives, rather than refuse. */
  wait?: boolean;
  /** `--reason TEXT`: why, in the event record. */
  reason?: string;
}

/**
 * `strategy retry`: failed steps go back to the state they failed in (the next run of it is the
 * next attempt), aborted steps to `initial`; the strategy to `initial`, for `apply`.
 */
export async function strategyRetry(ctx: Ctx, type: StrategyType | undefined, input: RetryInput): Promise<Outcome> {
  const kinds = input.failed || input.aborted ? { failed: Boolean(input.failed), aborted: Boolean(input.aborted) } : { failed: true, aborted: true };
  const reason = checkReason(input.reason);
  if (input.wait) await waitForLiveRuns(ctx, false);
  const result = await withExistingWriteDb(ctx, async (db) =>
    (await immediate(db, async (tx) => {
      const s = await theStrategy(tx, type);
      const named = input.clouds.length ? [...new Set(input.clouds)] : null;
      // Runs held as of unknown outcome (several hosts) run again; they are live runs, for the rest.
      const again = await retryUnknownRuns(tx, s, named, reason);
      if (again) return { result: { kind: 'strategy' as const, strategy: s }, notes: again };
      // A run still going (dcm was killed) must end, or be adopted, before its step moves.
      refuseWhileLive((await liveRuns(tx, s, ctx)), 'retry');
      if (!RETRYABLE.includes(s.state)) throw new OperationError(`Strategy in state ${s.state} cannot be retried`);
      const states = statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null });
      if (named) {
        const stepStates = await stepStatesOf(tx, named);
        for (const c of named) {
          const st = stepStates.get(c);
          if (st === undefined) {
            if ((await findSubcloud(tx, c)) === undefined) throw new OperationError(`Subcloud ${c} does not exist`);
            throw new OperationError(`Subcloud ${c} has no step in the strategy`);
          }
          if (retryTarget({ state: st, failedIn: null }, kinds, states) === null) {
            const which = kinds.failed && kinds.aborted ? 'failed or aborted' : kinds.failed ? 'failed' : 'aborted';
            throw new OperationError(`Step of ${c} is ${st}: only ${which} steps are retried`);
          }
        }
      }
      // Which steps went where, said on stderr: the record on stdout is dcmanager's and says nothing of them.
      const reset: string[] = [];
      for (const c of (await retryCandidates(tx, named))) {
        const to = retryTarget({ state: c.state, failedIn: c.lastRunState }, kinds, states);
        if (to !== null && (await resetStep(tx, c.id, c.state, to))) reset.push(`  ${c.cloud}: ${c.state} -> ${to}`);
      }
      if (reset.length === 0) throw new OperationError('Nothing to retry');
      await reopenGates(tx);
      await casStrategyState(tx, RETRYABLE, 'initial');
      await recordEvent(tx, whoAmI(), EVENTS.retried, `${reset.length} step(s): ${reset.map((r) => r.trim()).join(', ')}`, reason);
      const notes = [`retry reset ${reset.length} step${reset.length === 1 ? '' : 's'} (dcm strategy apply runs them):`, ...reset];
      return { result: { kind: 'strategy' as const, strategy: (await getStrategy(tx))! }, notes };
    })),
  );
  return result ?? strategyNotFound(type);
}
