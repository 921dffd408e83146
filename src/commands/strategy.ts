/** `dcm strategy create|show|delete|abort` (apply lives in the orchestrator). */
import path from 'node:path';
import { OperationError, UsageError } from '../domain/errors.js';
import { formatMaxFailures, parseMaxFailures } from '../domain/control.js';
import { checkCombination, checkMaxParallel, planSteps, StepPlanner, type PlannedStep } from '../domain/planning.js';
import { withPrestageRelease } from './system-controller.js';
import { timeoutExtraArgs, typeExtraArgs, type RawDriverOptions, type RawTypeOptions } from '../domain/options.js';
import { driverExtraArgs, loadPreview, parseDriverName } from '../drivers/index.js';
import { STRATEGY_ENDED, statesOf, type ApplyType, type StrategyType } from '../domain/types.js';
import { findGroup, listGroups } from '../store/groups.js';
import type { Db } from '../store/open.js';
import { getStrategy, insertStages, insertStrategy, type Strategy } from '../store/strategy.js';
import { insertSteps } from '../store/steps.js';
import { allSubcloudNames, idOfName, outsideSelection, planningPages, planningRecords } from '../store/subclouds.js';
import { describeLeftOut, LeftOutTally } from '../domain/left-out.js';
import { explainingNoSteps, leftOutContext } from './create-left-out.js';
import { now } from '../store/clock.js';
import { DEFAULT_UNCREATED } from './groups.js';
import { immediate, runtimeOf, withExistingWriteDb, withReadDb, withWriteDb, type Ctx } from './context.js';
import type { CommandResult, Outcome } from './results.js';
import { archiveStrategy } from '../store/archive.js';
import { recordEvent } from '../store/events.js';
import { checkReason, EVENTS } from '../domain/events.js';
import { whoAmI } from '../platform/who.js';
import { dryRunView } from './dryrun.js';
import { showCommandsView } from './show-commands.js';
import { liveRuns, refuseWhileLive, waitForLiveRuns } from './live-runs.js';
import { abortLeftBehind } from './abort-now.js';
import { checkSimFailClouds } from '../domain/choices.js';
import type { Result } from './plain-results.js';
import { strategyIdOf } from '../domain/logs.js';
import type { LabelSelector } from '../domain/inventory.js';
import { fillStageGates, listStageGates } from '../store/stage-gates.js';
import { probeForCreate } from './create-probe.js';
import { auditExtraArgs, checkLogFolders, configGateCheck, deferExtraArgs, NO_CHECK, selectionText, stageGateOptions, targetVersionOption } from './create-parts.js';
import { findSubcloud } from '../store/subclouds.js';
import { parseStartRateOptions, storeStartRate } from '../domain/start-rate.js';
import { fillStartRates } from '../store/start-rate.js';
import type { PlanHead } from '../domain/plan-digest.js';
import { keepPlan, pinnedDigest, planHasher, plannedStages, refusal, settlePlan } from './plan-digest.js';
import { recordAvailability } from '../store/availability.js';

export interface CreateInput {
  type: StrategyType;
  cloudName?: string;
  /** Several clouds: one stage, in the order given. */
  cloudNames?: string[];
  /**
   * The old client's `patch-strategy create [cloud_name] patch_id`: the patch id given as the
   * second positional. With one positional and no --patch-id, a word that names no subcloud is the
   * patch id too (resolvePatchId).
   */
  positionalPatchId?: string;
  /** `patch-strategy create WORD` (the alias only): WORD may be the old client's patch id. */
  loneWordMayBePatchId?: boolean;
  groupName?: string;
  /** `--label k=v`: only the subclouds these labels select (with the fleet or a group). */
  labels?: LabelSelector;
  subcloudApplyType?: ApplyType;
  maxParallelSubclouds?: number;
  stopOnFailure?: boolean;
  /** `--max-failures N|P%`. */
  maxFailures?: string;
  force?: boolean;
  /** `--target-version V`: plan by target (the subcloud's software_version), not by the last sync. */
  targetVersion?: string;
  /** `--require-audit`: a step whose site's audit disagrees (or fails) ends failed, not complete. */
  requireAudit?: boolean;
  /** `--audit-disagrees-ok`: complete with audits that disagreed exits 0, not 5. */
  auditDisagreesOk?: boolean;
  typeOptions?: RawTypeOptions;
  driverOptions?: RawDriverOptions;
  /** Every check, then the plan, and nothing written. */
  dryRun?: boolean;
  /** With dryRun: instead of the plan, the runs of this subcloud (`true`: the plan's first). */
  showCommands?: string | true;
  /** `--stage-max-failures N|P%`, `--stage-gate`, `--gate-check CMD`: every stage's (README "Stage gates"). */
  stageMaxFailures?: string;
  stageGate?: string;
  gateCheck?: string;
  /** `--probe`: the chosen subclouds are probed first; one that does not answer refuses the create... */
  probe?: boolean;
  /** ...unless `--skip-unreachable`: it is recorded offline, so left out, and named in a warning. */
  skipUnreachable?: boolean;
  /** `--defer-delay`, `--defer-until` (domain/deferral.ts). */
  deferDelay?: string;
  deferUntil?: string;
  /** `--on-event CMD` (sim; the exec config has `on_event`): told of a stage held, the end, a takeover. */
  onEvent?: string;
  /** `--start-rate N/min [--ramp F --ramp-after K]` (domain/start-rate.ts): every stage's, else the groups'. */
  startRate?: string;
  ramp?: string;
  rampAfter?: string;
  /** `--plan DIGEST`: create only the plan a dry run printed this digest for (commands/plan-digest.ts). */
  plan?: string;
  /** Said on stderr once the command succeeded. */
  warn?: (text: string) => void;
}

export function strategyNotFound(type?: StrategyType): never {
  throw new OperationError(type ? `Strategy of type '${type}' not found` : 'Strategy not found');
}

/** The one strategy, of the given type if `type` is set. */
export async function theStrategy(db: Db, type?: StrategyType): Promise<Strategy> {
  const s = await getStrategy(db);
  if (!s || (type && s.type !== type)) strategyNotFound(type);
  return s;
}

function combines(req: Parameters<typeof checkCombination>[0]): boolean {
  try {
    checkCombination(req);
    return true;
  } catch {
    return false;
  }
}

/**
 * The patch id of the old client's positional, moved into the type options: the second positional,
 * or, for the `patch-strategy` alias, a lone positional that names no subcloud (the old client's
 * `patch-strategy create P1` patches the fleet with P1; the current client's `patch-strategy create
 * subcloud1` names a subcloud). The file is read only for that lone word.
 */
async function resolvePatchId(ctx: Ctx, input: CreateInput): Promise<CreateInput> {
  if (input.type !== 'patch') return input;
  const given = input.typeOptions?.patchId;
  let patchId = input.positionalPatchId;
  let clouds = input.cloudNames ?? [];
  if (input.loneWordMayBePatchId && patchId === undefined && given === undefined && clouds.length === 1 && input.cloudName === undefined) {
    const word = clouds[0];
    if (!await withReadDb(ctx, false, async (db) => (await findSubcloud(db, word)) !== undefined)) {
      patchId = word;
      clouds = [];
    }
  }
  if (patchId === undefined) return input;
  if (given !== undefined) throw new UsageError(`the patch id is given twice (${patchId} and --patch-id ${given}): give one`);
  return { ...input, cloudNames: clouds, typeOptions: { ...input.typeOptions, patchId } };
}

export async function strategyCreate(ctx: Ctx, given: CreateInput): Promise<CommandResult | Result> {
  const input = await resolvePatchId(ctx, given);
  // Option values on their own first (SPEC §5), as usage errors, before the file is read: a bad
  // value is reported even when a strategy already exists.
  const req = {
    type: input.type,
    cloudName: input.cloudName ?? input.cloudNames?.[0] ?? null,
    cloudNames: input.cloudNames && input.cloudNames.length > 1 ? input.cloudNames : null,
    groupName: input.groupName ?? null,
    subcloudApplyType: input.subcloudApplyType ?? null,
    maxParallelSubclouds: input.maxParallelSubclouds ?? null,
    force: Boolean(input.force),
    targetVersion: targetVersionOption(input),
  };
  const labels = input.labels && Object.keys(input.labels).length ? input.labels : null;
  const named = Boolean(req.cloudName || req.cloudNames?.length);
  // A named cloud is chosen already: a label that did not match it would drop it without a word.
  if (labels && req.cloudName) throw new UsageError('The cloud_name and label options are mutually exclusive.');
  const maxFailures = input.maxFailures === undefined ? null : formatMaxFailures(parseMaxFailures(input.maxFailures));
  if (maxFailures !== null && input.stopOnFailure) {
    throw new UsageError('--stop-on-failure is --max-failures 1: give one of them');
  }
  const gates = stageGateOptions(input);
  const rate = storeStartRate(parseStartRateOptions(input) ?? null);
  const pinned = pinnedDigest(input.plan);
  const raw = input.driverOptions ?? {};
  const driverName = parseDriverName(raw.driver);
  if (input.skipUnreachable && !input.probe) throw new UsageError('--skip-unreachable needs --probe: only a probe tells which subclouds do not answer');
  const deferExtra = deferExtraArgs(input);
  if (input.onEvent !== undefined) {
    if (input.onEvent.trim() === '') throw new UsageError("option '--on-event' is empty: give a command");
    if (driverName === 'exec') throw new UsageError('--on-event is for the sim driver: give the exec config an on_event');
    // Run through /bin/sh -c in the folder create ran in, as the exec config's runs in its own.
    deferExtra.on_event = input.onEvent;
    deferExtra.on_event_cwd = process.cwd();
  }
  if (input.showCommands !== undefined) {
    if (!input.dryRun) throw new UsageError('--show-commands needs --dry-run: it shows what would run, and creates nothing');
    if (driverName !== 'exec') throw new UsageError('--show-commands needs --driver exec: the sim driver runs no command');
  }
  const extra = typeExtraArgs(input.type, input.typeOptions ?? {});
  // Each driver checks its own options (the exec driver reads and checks its config file here).
  const driver = {
    ...(await driverExtraArgs(driverName, {
      type: input.type,
      states: input.type === 'custom' ? null : statesOf(input.type, extra as { cert_file?: string | null }),
      raw,
      typeOptions: extra,
      dbPath: ctx.dbPath,
      seed: Math.floor(Math.random() * 2 ** 31),
    })),
    ...timeoutExtraArgs(input.type, raw),
  };
  Object.assign(driver, auditExtraArgs(driverName, driver, raw, Boolean(input.requireAudit), Boolean(input.auditDisagreesOk)));
  const simFails = (driver.sim_fail as string[] | undefined) ?? [];
  // The check command: the option's, else the exec config's `gate_check`.
  const gateCheck = gates.gateCheck ?? configGateCheck(driver.exec_config);
  if (gates.gate === 'check' && gateCheck === null) throw new UsageError(NO_CHECK);
  const fillGates = async (db: Db) => {
    await fillStageGates(db, { maxFailures: gates.maxFailures, gate: gates.gate, gateCheck });
    await fillStartRates(db, rate);
    // A group's default may be `check`: with no command anywhere it could never pass.
    if (gateCheck === null && (await listStageGates(db)).some((g) => g.gate === 'check')) throw new UsageError(NO_CHECK);
  };
  // What the plan's digest covers besides its subclouds and stages (domain/plan-digest.ts): the
  // record's options and the extra args create writes, but the sim's seed when it was drawn at random.
  const head = (): PlanHead => {
    const options: Record<string, unknown> = {
      subcloud_apply_type: req.subcloudApplyType, max_parallel_subclouds: req.maxParallelSubclouds, stop_on_failure: Boolean(input.stopOnFailure), max_failures: maxFailures,
      ...extra, ...driver, ...deferExtra, target_version: req.targetVersion, cloud_name: req.cloudName, cloud_names: req.cloudNames, group: req.groupName, labels, force: req.force,
    };
    if ((raw as { simSeed?: unknown }).simSeed === undefined) delete options.sim_seed;
    let states: readonly string[] = [];
    try {
      states = statesOf(input.type, { ...extra, ...driver } as { cert_file?: string | null }) ?? [];
    } catch {
      // A custom type's states are its exec config's, which the options hold already.
    }
    return { type: input.type, states, options };
  };
  const stageOptions = { maxFailures: gates.maxFailures, gate: gates.gate, gateCheck, startRate: rate };
  // The range (check 3) is a value on its own too; only options that may not be combined (check 2,
  // reported after check 1) come before it.
  if (combines(req)) checkMaxParallel(input.type, req.maxParallelSubclouds, Boolean(extra.with_prestage));

  // What the left-out warning says, and what the error says when nobody is left (create-left-out.ts).
  const said = leftOutContext(input.type, req, selectionText(req.groupName, labels));
  /** Checks 1, 2 and 4-7 against the file, then the plan; who it leaves out goes to `leftOut`. */
  const plan = async (db: Db | null, leftOut?: LeftOutTally) => {
    const existing = db && await getStrategy(db);
    if (existing) throw new OperationError(`Strategy of type: '${existing.type}' already exists`);
    checkCombination(req);
    const records = db ? await planningRecords(db) : [];
    checkSimFailClouds(simFails, new Set(records.map((r) => r.name)), records.map((r) => r.name));
    const selected = labels && db ? await planningRecords(db, labels) : records;
    // A dry run on a file that does not exist yet: the Default group every file holds.
    const groups = db ? await listGroups(db) : [DEFAULT_UNCREATED];
    const planned = explainingNoSteps(said, () => planSteps(req, groups.map((g) => ({
      id: g.id,
      name: g.name,
      updateApplyType: g.update_apply_type,
      maxParallelSubclouds: g.max_parallel_subclouds,
    })), selected, leftOut));
    if (driverName === 'exec') checkLogFolders(planned.steps.map((st) => st.name));
    if (leftOut && db && !named) {
      const only = req.groupName ? await findGroup(db, req.groupName) : undefined;
      const out = await outsideSelection(db, only ? only.id : null, labels ?? {}, leftOut.keep);
      leftOut.addCounted('outside', out.count, out.names);
    }
    return planned;
  };
  /** Said once the create (or its dry run) succeeded: who was left out, by reason. */
  const sayLeftOut = (tally: LeftOutTally, planned: number, shown: number) => {
    const text = describeLeftOut(tally, planned, said, shown);
    if (text) input.warn?.(text);
  };

  if (input.dryRun) {
    const all = { ...extra, ...driver };
    const show = input.showCommands;
    // Loaded before the read transaction, which cannot wait.
    const preview = show === undefined ? null : await loadPreview();
    const view = async (db: Db | null) => {
      // A dry run names every subcloud it would leave out.
      const tally = new LeftOutTally(Infinity);
      const planned = await plan(db, tally);
      sayLeftOut(tally, planned.steps.length, Infinity);
      // The plan's digest, and the plan kept for a later --plan to say what changed.
      const hasher = planHasher(head(), true);
      for (const st of planned.steps) hasher.site(st.name, st.stage);
      const kept = hasher.finish(await plannedStages(db, planned.stages, stageOptions));
      if (pinned !== undefined && kept.digest !== pinned) throw refusal(pinned, kept);
      keepPlan(kept);
      // A missing file has no subcloud, so its plan has no step: plan() has refused it already.
      if (preview && db && show !== undefined) return await showCommandsView(db, planned, show, { type: input.type, extra: all, dbPath: path.resolve(ctx.dbPath), preview });
      return await dryRunView(db, planned, input.type, all, kept.digest, new Map(kept.stages.map((s) => [s.stage, s.startRate])));
    };
    // Read only: a missing file is an empty fleet, and nothing is created or written.
    return (await withReadDb(ctx, null, (db) => db.transaction(async (tx) => view(tx)).deferred())) ?? await view(null);
  }

  const record = async (db: Db) => {
    const shown = await recordedWindow(db, req);
    return {
      type: input.type,
      subcloudApplyType: shown.subcloudApplyType,
      maxParallelSubclouds: shown.maxParallelSubclouds,
      stopOnFailure: Boolean(input.stopOnFailure),
      maxFailures,
      extra: { ...await withPrestageRelease(db, input.type, extra), ...driver, ...deferExtra, ...(req.targetVersion !== null ? { target_version: req.targetVersion } : {}), cloud_name: req.cloudName, ...(req.cloudNames ? { cloud_names: req.cloudNames } : {}), group: req.groupName, ...(labels ? { labels: Object.entries(labels).map(([k, v]) => `${k}=${v ?? ''}`) } : {}), force: req.force },
    };
  };
  // Probed before the write (a probe may take its timeout): the subclouds the plan would take now.
  const offline = input.probe ? await probeForCreate(ctx, { ...extra, ...driver }, plan, Boolean(input.skipUnreachable), input.warn) : [];

  return await withWriteDb(ctx, async (db) =>
    (await immediate(db, async (tx) => {
      // Left out as dcmanager leaves out an offline subcloud: recorded so, with the strategy.
      if (offline.length) await recordAvailability(tx, offline.map((p) => ({ id: p.id, answered: false })), new Map());
      const tally = new LeftOutTally();
      const hasher = planHasher(head(), pinned !== undefined);
      if (named) {
        const p = await plan(tx, tally);
        await insertStrategy(tx, await record(tx), p.stages);
        await insertSteps(tx, p.steps);
        await fillGates(tx);
        for (const st of p.steps) hasher.site(st.name, st.stage);
        await settlePlan(tx, hasher, pinned);
        sayLeftOut(tally, p.steps.length, 10);
        return { kind: 'strategy', strategy: await theStrategy(tx) };
      }
      // The fleet or a group: planned as the subclouds are read, a page at a time, and the steps
      // inserted in batches, so that memory does not follow the fleet. The strategy row goes
      // first (the steps refer to it) and the stages last (known once every subcloud is seen);
      // an error of the plan on any page rolls all of it back with the transaction.
      const existing = await getStrategy(tx);
      if (existing) throw new OperationError(`Strategy of type: '${existing.type}' already exists`);
      checkCombination(req);
      const known = new Set<string>();
      for (const f of simFails) {
        const c = f.slice(0, f.indexOf('='));
        if ((await idOfName(tx, c)) !== undefined) known.add(c);
      }
      checkSimFailClouds(simFails, known, simFails.some((f) => !known.has(f.slice(0, f.indexOf('=')))) ? await allSubcloudNames(tx) : []);
      const groups = (await listGroups(tx)).map((g) => ({
        id: g.id,
        name: g.name,
        updateApplyType: g.update_apply_type,
        maxParallelSubclouds: g.max_parallel_subclouds,
      }));
      const only = req.groupName ? await findGroup(tx, req.groupName) : undefined;
      await insertStrategy(tx, await record(tx), []);
      const planner = new StepPlanner(req, groups, tally);
      const batch: PlannedStep[] = [];
      let planned = 0;
      for await (const s of planningPages(tx, only ? only.id : null, undefined, labels ?? {})) {
        const step = planner.add(s);
        if (!step) continue;
        planned++;
        // As in the named path: a name the exec driver could not make a log folder of is refused
        // at create (the transaction rolls back), not at each step's first run.
        if (driverName === 'exec') checkLogFolders([step.name]);
        hasher.site(step.name, step.stage);
        batch.push(step);
        if (batch.length === 10_000) {
          await insertSteps(tx, batch);
          batch.length = 0;
        }
      }
      const stages = explainingNoSteps(said, () => planner.finish());
      await insertSteps(tx, batch);
      await insertStages(tx, stages);
      await fillGates(tx);
      await settlePlan(tx, hasher, pinned);
      const out = await outsideSelection(tx, only ? only.id : null, labels ?? {}, tally.keep);
      tally.addCounted('outside', out.count, out.names);
      sayLeftOut(tally, planned, 10);
      return { kind: 'strategy', strategy: await theStrategy(tx) };
    })),
  );
}

/** What the server records as the window when neither --group nor --max-parallel-subclouds says one. */
export const DEFAULT_RECORDED_MAX_PARALLEL = 2;

/**
 * What the strategy record holds for its apply type and window, as dcmanager's server fills them
 * in (orchestrator_manager.create_sw_update_strategy): with --group, the group's apply type and
 * max parallel subclouds; serial, a window of 1; with neither a group nor a window, 2. The windows
 * themselves are the stages' (each group's own, when no window was given); this is what the
 * record says, as a script reading `strategy show` expects it.
 */
async function recordedWindow(
  db: Db,
  req: { groupName: string | null; subcloudApplyType: ApplyType | null; maxParallelSubclouds: number | null },
): Promise<{ subcloudApplyType: ApplyType | null; maxParallelSubclouds: number | null }> {
  const group = req.groupName === null ? undefined : (await findGroup(db, req.groupName));
  const applyType = group ? group.update_apply_type : req.subcloudApplyType;
  const max = applyType === 'serial' ? 1 : group ? group.max_parallel_subclouds : (req.maxParallelSubclouds ?? DEFAULT_RECORDED_MAX_PARALLEL);
  return { subcloudApplyType: applyType, maxParallelSubclouds: max };
}

export async function strategyShow_(ctx: Ctx, type?: StrategyType): Promise<CommandResult> {
  return { kind: 'strategy', strategy: (await withReadDb(ctx, null, (db) => theStrategy(db, type))) ?? strategyNotFound(type) };
}

/** Delete the strategy, keeping its record (store/archive.ts) until `db prune` removes it. */
export async function strategyDelete(ctx: Ctx, type?: StrategyType, opts: { wait?: boolean; reason?: string } = {}): Promise<Outcome> {
  const reason = checkReason(opts.reason);
  if (opts.wait) await waitForLiveRuns(ctx, false);
  const result = await withExistingWriteDb(ctx, async (db) => {
    const s = await theStrategy(db, type);
    // Its history is how a live run is found: never delete it from under one.
    refuseWhileLive((await liveRuns(db, s, ctx)), 'delete the strategy');
    if (!['initial', ...STRATEGY_ENDED].includes(s.state) && !(await abortLeftBehind(db, s, runtimeOf(ctx)))) {
      throw new OperationError(`Strategy in state ${s.state} cannot be deleted`);
    }
    // The record as printed is checked (an unknown -c) before anything is written.
    ctx.checkResult?.({ kind: 'strategy', strategy: s });
    const who = whoAmI();
    await recordEvent(db, who, EVENTS.deleted, `${s.state}, kept as strategy ${strategyIdOf(s.created_at)}`, reason);
    const id = await archiveStrategy(db, `${who.user}@${who.host}`);
    // dcmanager's API answers with the record it marked `deleting` (its updated_at stamped), then
    // removes it in the background; dcm has removed it already, and prints what dcmanager prints.
    return { id, strategy: { ...s, state: 'deleting', updated_at: now(db) } };
  });
  if (!result) return strategyNotFound(type);
  return {
    result: { kind: 'strategy', strategy: result.strategy },
    notes: [`kept as strategy ${result.id}: strategy report --strategy ${result.id} and strategy events --strategy ${result.id} read it; db prune removes it`],
  };
}

