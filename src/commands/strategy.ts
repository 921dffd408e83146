/** `dcm strategy create|show|delete|abort` (apply lives in the orchestrator). */
import { OperationError } from '../domain/errors.js';
import { checkCombination, checkMaxParallel, planSteps } from '../domain/planning.js';
import { timeoutExtraArgs, typeExtraArgs, type RawDriverOptions, type RawTypeOptions } from '../domain/options.js';
import { driverExtraArgs, parseDriverName } from '../drivers/index.js';
import { STRATEGY_ENDED, statesOf, type ApplyType, type StrategyType } from '../domain/types.js';
import { listGroups } from '../store/groups.js';
import type { Db } from '../store/open.js';
import { deleteStrategy, getStrategy, insertStrategy, type Strategy } from '../store/strategy.js';
import { insertSteps } from '../store/steps.js';
import { planningRecords } from '../store/subclouds.js';
import { immediate, withExistingWriteDb, withReadDb, withWriteDb, type Ctx } from './context.js';
import { strategyShow } from './views.js';
import type { Result } from '../cli/output/result.js';

export interface CreateInput {
  type: StrategyType;
  cloudName?: string;
  groupName?: string;
  subcloudApplyType?: ApplyType;
  maxParallelSubclouds?: number;
  stopOnFailure?: boolean;
  force?: boolean;
  typeOptions?: RawTypeOptions;
  driverOptions?: RawDriverOptions;
}

export function strategyNotFound(type?: StrategyType): never {
  throw new OperationError(type ? `Strategy of type '${type}' not found` : 'Strategy not found');
}

/** The one strategy, of the given type if `type` is set. */
export function theStrategy(db: Db, type?: StrategyType): Strategy {
  const s = getStrategy(db);
  if (!s || (type && s.type !== type)) strategyNotFound(type);
  return s;
}

export async function strategyCreate(ctx: Ctx, input: CreateInput): Promise<Result> {
  // Option values on their own, the driver's config file included, are checked before the file is
  // read (SPEC §5): a bad one is a usage error even when a strategy exists already.
  const raw = input.driverOptions ?? {};
  const driverName = parseDriverName(raw.driver);
  const typeExtra = typeExtraArgs(input.type, input.typeOptions ?? {});
  const driver = {
    ...(await driverExtraArgs(driverName, {
      type: input.type,
      states: input.type === 'custom' ? null : statesOf(input.type, typeExtra as { cert_file?: string | null }),
      raw,
      dbPath: ctx.dbPath,
      seed: Math.floor(Math.random() * 2 ** 31),
    })),
    ...timeoutExtraArgs(input.type, raw),
  };
  return withWriteDb(ctx, (db) =>
    immediate(db, () => {
      const existing = getStrategy(db);
      if (existing) throw new OperationError(`Strategy of type: '${existing.type}' already exists`);

      const req = {
        type: input.type,
        cloudName: input.cloudName ?? null,
        groupName: input.groupName ?? null,
        subcloudApplyType: input.subcloudApplyType ?? null,
        maxParallelSubclouds: input.maxParallelSubclouds ?? null,
        force: Boolean(input.force),
      };
      checkCombination(req);
      const extra = typeExtra;
      checkMaxParallel(input.type, req.maxParallelSubclouds);

      const plan = planSteps(req, listGroups(db).map((g) => ({
        id: g.id,
        name: g.name,
        updateApplyType: g.update_apply_type,
        maxParallelSubclouds: g.max_parallel_subclouds,
      })), planningRecords(db));

      insertStrategy(
        db,
        {
          type: input.type,
          subcloudApplyType: req.subcloudApplyType,
          maxParallelSubclouds: req.maxParallelSubclouds,
          stopOnFailure: Boolean(input.stopOnFailure),
          extra: { ...extra, ...driver, cloud_name: req.cloudName, group: req.groupName, force: req.force },
        },
        plan.stages,
      );
      insertSteps(db, plan.steps);
      return strategyShow(theStrategy(db));
    }),
  );
}

export async function strategyShow_(ctx: Ctx, type?: StrategyType): Promise<Result> {
  return withReadDb(ctx, null, (db) => strategyShow(theStrategy(db, type))) ?? strategyNotFound(type);
}

export async function strategyDelete(ctx: Ctx, type?: StrategyType): Promise<Result> {
  const result = withExistingWriteDb(ctx, (db) => {
    const s = theStrategy(db, type);
    if (!['initial', ...STRATEGY_ENDED].includes(s.state)) {
      throw new OperationError(`Strategy in state ${s.state} cannot be deleted`);
    }
    deleteStrategy(db);
    return strategyShow({ ...s, state: 'deleted' });
  });
  return result ?? strategyNotFound(type);
}
