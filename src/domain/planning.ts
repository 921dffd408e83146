/**
 * Who gets a step, in which stage, with which window (SPEC §5). Pure: plain records in, a plan or
 * a typed error out, checks in the documented order.
 */
import { ClientCheckError, OperationError } from './errors.js';
import { TYPES, type ApplyType, type Endpoint, type StrategyType, type SyncStatus } from './types.js';
import type { LeftOutReason, LeftOutTally } from './left-out.js';
import { PRESTAGE_DEPLOY_STATUSES } from './prestage-rules.js';

/** dcmanager's `Strategy has no steps to apply`, with who was left out (the caller says it before the error). */
export class NoStepsError extends OperationError {
  constructor(readonly leftOut?: LeftOutTally) {
    super('Strategy has no steps to apply');
  }
}

export interface GroupRecord {
  id: number;
  name: string;
  updateApplyType: ApplyType;
  maxParallelSubclouds: number;
}

export interface SubcloudRecord {
  id: number;
  name: string;
  groupId: number;
  management: string;
  availability: string;
  deployStatus: string;
  sync: Record<Endpoint, SyncStatus>;
  /** The subcloud's software_version: what `--target-version` compares (null when unset). */
  softwareVersion?: string | null;
}

export interface PlanRequest {
  type: StrategyType;
  cloudName?: string | null;
  /** Several named clouds (`strategy create s1 s7 s9`): one stage, in the order given. */
  cloudNames?: readonly string[] | null;
  groupName?: string | null;
  subcloudApplyType?: ApplyType | null;
  maxParallelSubclouds?: number | null;
  force?: boolean;
  /**
   * `--target-version V`: plan by target rather than by the last sync (which is what the last
   * strategy of the type left): every managed, online subcloud whose software_version is not V.
   */
  targetVersion?: string | null;
}

export interface PlannedStep {
  subcloudId: number;
  name: string;
  stage: number;
}

export interface StagePlan {
  stage: number;
  /** How many subclouds of this stage may be in flight at once. */
  window: number;
  /** Group the stage was drawn from (informational). */
  groupName: string;
}

export interface Plan {
  steps: PlannedStep[];
  stages: StagePlan[];
}

/** Check 2 of SPEC §5: what may not be combined. Runs before the range check and any lookup. */
export function checkCombination(req: PlanRequest): void {
  if ((req.cloudName || req.cloudNames?.length) && req.groupName) {
    throw new ClientCheckError('The cloud_name and group options are mutually exclusive.');
  }
  // dcmanager's client words, one message per option.
  if (req.groupName && req.subcloudApplyType) {
    throw new ClientCheckError('The --subcloud-apply-type is not supported when --group option is applied.');
  }
  if (req.groupName && req.maxParallelSubclouds != null) {
    throw new ClientCheckError('The --max-parallel-subclouds options is not supported when --group option is applied.');
  }
}

/**
 * The server's words for a window out of range, else null: a prestage (or a sw-deploy
 * `--with-prestage`) counts against prestage's limit and says `For prestage,`, any other type
 * `For <type> strategy,` (utils.validate_strategy_payload, as its controller tests give them).
 */
export function maxParallelRefusal(type: StrategyType, value: number | null | undefined, withPrestage = false): string | null {
  if (value == null) return null;
  const prestage = type === 'prestage' || withPrestage;
  const limit = TYPES[prestage ? 'prestage' : type].maxParallelLimit;
  if (Number.isInteger(value) && value >= 1 && value <= limit) return null;
  return `Invalid max-parallel-subclouds value: ${value}. For ${prestage ? 'prestage' : `${type} strategy`}, the value must be between 1 and ${limit}.`;
}

/**
 * Check 3 of SPEC §5. The client passes the value on and the server refuses it with a 400, so
 * the client exits 1: an OperationError, not a usage error.
 */
export function checkMaxParallel(type: StrategyType, value: number | null | undefined, withPrestage = false): void {
  const refusal = maxParallelRefusal(type, value, withPrestage);
  if (refusal) throw new OperationError(refusal);
}

/** Why a subcloud cannot be a candidate at all (SPEC §5's skips before the sync status), else null. */
function candidacy(type: StrategyType, sc: SubcloudRecord): LeftOutReason | null {
  if (sc.management !== 'managed') return 'unmanaged';
  if (sc.availability !== 'online') return 'offline';
  // initial_subcloud_validate: sw-deploy-apply-strategy-failed may be for want of a prestage.
  if (type === 'prestage' && !PRESTAGE_DEPLOY_STATUSES.includes(sc.deployStatus)) return 'deploy-status';
  return null;
}

/**
 * Whether a candidate is taken: by target, when its version is not the target's; else when its
 * endpoint is not in-sync (or `force`). The reason it is left out, else null.
 */
function taken(sc: SubcloudRecord, endpoint: Endpoint | null, force: boolean, target: string | null): LeftOutReason | null {
  if (target !== null) return sc.softwareVersion === target ? 'at-target' : null;
  if (endpoint && !force && sc.sync[endpoint] === 'in-sync') return 'in-sync';
  return null;
}

/**
 * Checks 4–7 and the plan itself. Subclouds are taken group by group (groups in id order,
 * subclouds in id order); each group with a step is one stage, unless a cloud or a group was named,
 * which makes one stage.
 */
export function planSteps(
  req: PlanRequest,
  groups: readonly GroupRecord[],
  subclouds: readonly SubcloudRecord[],
  leftOut?: LeftOutTally,
): Plan {
  const info = TYPES[req.type];
  const endpoint = info.endpoint;
  const force = Boolean(req.force) && info.forceAllowed;
  const target = req.targetVersion ?? null;
  const groupById = new Map(groups.map((g) => [g.id, g]));

  const named = req.cloudNames?.length ? [...new Set(req.cloudNames)] : req.cloudName ? [req.cloudName] : null;
  let pool: SubcloudRecord[];
  if (named) {
    // Each name checked as a single one is (SPEC §5, checks 4 and 5), in the order given.
    const byName = new Map(subclouds.map((s) => [s.name, s]));
    pool = named.map((name) => {
      const sc = byName.get(name);
      if (!sc) throw new OperationError(`Subcloud ${name} does not exist`);
      if (target !== null && sc.softwareVersion === target) throw new OperationError(`Subcloud ${sc.name} is already at ${target}`);
      if (target === null && endpoint && sc.sync[endpoint] === 'in-sync' && !force) {
        throw new OperationError(`Subcloud ${sc.name} does not require ${info.requireLabel}`);
      }
      return sc;
    });
  } else if (req.groupName) {
    // By name, else by id (as the store's findGroup: a group named "3" wins over the group of id 3).
    const g =
      groups.find((x) => x.name === req.groupName) ??
      (/^\d+$/.test(req.groupName) ? groups.find((x) => x.id === Number(req.groupName)) : undefined);
    if (!g) throw new OperationError(`Subcloud group ${req.groupName} does not exist`);
    pool = subclouds.filter((s) => s.groupId === g.id);
  } else {
    pool = [...subclouds];
  }

  const candidates = pool.filter((s) => {
    const why = candidacy(req.type, s);
    if (why) leftOut?.add(why, s.name);
    return why === null;
  });
  // --force takes in-sync subclouds (check 5); an unknown status stays an error (check 6), unless
  // the plan is by target, which reads no sync status.
  if (target === null && endpoint && candidates.some((s) => s.sync[endpoint] === 'unknown')) {
    throw new OperationError(`${info.syncLabel} sync status is unknown for one or more subclouds`);
  }
  const chosen = candidates.filter((s) => {
    const why = taken(s, endpoint, force, target);
    if (why) leftOut?.add(why, s.name);
    return why === null;
  });
  if (chosen.length === 0) throw new NoStepsError(leftOut);

  const windowFor = (group: GroupRecord | undefined): number => {
    const applyType = req.subcloudApplyType ?? group?.updateApplyType ?? 'parallel';
    if (applyType === 'serial') return 1;
    return req.maxParallelSubclouds ?? group?.maxParallelSubclouds ?? 2;
  };

  // Order: group id, then subcloud id; named clouds in the order given. A named cloud (or
  // several) or a group is a single stage.
  const sorted = named ? chosen : [...chosen].sort((a, b) => a.groupId - b.groupId || a.id - b.id);
  const steps: PlannedStep[] = [];
  const stages: StagePlan[] = [];
  if (named || req.groupName) {
    const group = groupById.get(sorted[0].groupId);
    stages.push({ stage: 1, window: windowFor(group), groupName: group?.name ?? '' });
    for (const s of sorted) steps.push({ subcloudId: s.id, name: s.name, stage: 1 });
  } else {
    let lastGroup = -1;
    for (const s of sorted) {
      if (s.groupId !== lastGroup) {
        lastGroup = s.groupId;
        const group = groupById.get(s.groupId);
        stages.push({ stage: stages.length + 1, window: windowFor(group), groupName: group?.name ?? '' });
      }
      steps.push({ subcloudId: s.id, name: s.name, stage: stages.length });
    }
  }
  return { steps, stages };
}

/**
 * planSteps for the whole fleet or one group (no cloud named), fed one subcloud at a time, so
 * that a create over 1,000,000 subclouds never holds them all: subclouds must come in group id,
 * then subcloud id order (the order planSteps sorts them into). `add` plans each one (its step, or
 * null when it is left out) and `finish` gives the stages; both throw planSteps' errors (the
 * caller's transaction undoes what it wrote). The subclouds are pushed in, not pulled: the store
 * reads them a page at a time, asynchronously.
 */
export class StepPlanner {
  private readonly endpoint;
  private readonly force: boolean;
  private readonly target: string | null;
  private readonly groupById: Map<number, GroupRecord>;
  private readonly only: GroupRecord | undefined;
  private readonly stages: StagePlan[] = [];
  private lastGroup = -1;

  constructor(
    private readonly req: PlanRequest,
    groups: readonly GroupRecord[],
    private readonly leftOut?: LeftOutTally,
  ) {
    if (req.cloudName || req.cloudNames?.length) throw new Error('StepPlanner plans no named cloud: use planSteps');
    const info = TYPES[req.type];
    this.endpoint = info.endpoint;
    this.force = Boolean(req.force) && info.forceAllowed;
    this.target = req.targetVersion ?? null;
    this.groupById = new Map(groups.map((g) => [g.id, g]));
    if (req.groupName) {
      this.only =
        groups.find((x) => x.name === req.groupName) ??
        (/^\d+$/.test(req.groupName) ? groups.find((x) => x.id === Number(req.groupName)) : undefined);
      if (!this.only) throw new OperationError(`Subcloud group ${req.groupName} does not exist`);
    }
  }

  private windowFor(group: GroupRecord | undefined): number {
    const applyType = this.req.subcloudApplyType ?? group?.updateApplyType ?? 'parallel';
    if (applyType === 'serial') return 1;
    return this.req.maxParallelSubclouds ?? group?.maxParallelSubclouds ?? 2;
  }

  add(s: SubcloudRecord): PlannedStep | null {
    if (this.only && s.groupId !== this.only.id) return null;
    const why = candidacy(this.req.type, s);
    if (why) {
      this.leftOut?.add(why, s.name);
      return null;
    }
    const info = TYPES[this.req.type];
    if (this.target === null && this.endpoint && s.sync[this.endpoint] === 'unknown') throw new OperationError(`${info.syncLabel} sync status is unknown for one or more subclouds`);
    const out = taken(s, this.endpoint, this.force, this.target);
    if (out) {
      this.leftOut?.add(out, s.name);
      return null;
    }
    // A group is a single stage; the fleet, a stage per group.
    if (this.stages.length === 0 || (!this.only && s.groupId !== this.lastGroup)) {
      const group = this.groupById.get(s.groupId);
      this.stages.push({ stage: this.stages.length + 1, window: this.windowFor(group), groupName: group?.name ?? '' });
    }
    this.lastGroup = s.groupId;
    return { subcloudId: s.id, name: s.name, stage: this.stages.length };
  }

  finish(): StagePlan[] {
    if (this.stages.length === 0) throw new NoStepsError(this.leftOut);
    return this.stages;
  }
}

/** StepPlanner over an iterable: yields each step as planned and returns the stages. */
export function* planStepsInOrder(
  req: PlanRequest,
  groups: readonly GroupRecord[],
  subclouds: Iterable<SubcloudRecord>,
  leftOut?: LeftOutTally,
): Generator<PlannedStep, StagePlan[], undefined> {
  const planner = new StepPlanner(req, groups, leftOut);
  for (const s of subclouds) {
    const step = planner.add(s);
    if (step) yield step;
  }
  return planner.finish();
}
