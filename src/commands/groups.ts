/** `dcm subcloud-group …`: groups decide the stages and windows of a strategy. */
import { formatStartRate, parseStartRateOptions, storeStartRate, type StartRate } from '../domain/start-rate.js';
import { setGroupStartRate } from '../store/start-rate.js';
import { OperationError } from '../domain/errors.js';
import { checkGroupName } from '../domain/inventory.js';
import { groupApplyType, groupDescriptionValid, groupNameValid, INVALID_APPLY_TYPE, INVALID_DESCRIPTION, INVALID_NAME } from '../domain/group-rules.js';
import { checkTimeZone, parseMaintenanceWindow } from '../domain/maintenance.js';
import type { ApplyType } from '../domain/types.js';
import {
  countSubcloudsInGroup,
  deleteGroup,
  findGroup,
  insertGroup,
  listGroups,
  updateGroup,
  type GroupRow,
} from '../store/groups.js';
import { listSubclouds } from '../store/subclouds.js';
import { getStrategy } from '../store/strategy.js';
import { checkReason, EVENTS } from '../domain/events.js';
import { recordEvent } from '../store/events.js';
import { whoAmI } from '../platform/who.js';
import type { Db } from '../store/open.js';
import { immediate, withReadDb, withWriteDb, type Ctx } from './context.js';
import type { CommandResult, GroupRecord, Outcome } from './results.js';
import { formatStageGate, formatStageMaxFailures, parseStageGate, parseStageMaxFailures } from '../domain/stage-gates.js';
import { groupGateDefaults, setGroupGateDefaults } from '../store/stage-gates.js';

export interface GroupInput {
  name?: string;
  description?: string;
  /** As typed: the server checks it (domain/group-rules.ts). */
  updateApplyType?: string;
  maxParallelSubclouds?: number;
  /** The stage gate defaults of the group's stages (README "Stage gates"). */
  stageMaxFailures?: string;
  stageGate?: string;
  /** As typed: checked and normalised here (domain/maintenance.ts); `none` clears it. */
  maintenanceWindow?: string;
  /** An IANA zone, checked here. */
  maintenanceTz?: string;
  /** `--reason TEXT` (update): why, in the strategy's event record when a strategy exists. */
  reason?: string;
  /** The default start rate of the group's stages (domain/start-rate.ts); `none` removes it. */
  startRate?: string;
  ramp?: string;
  rampAfter?: string;
}

async function mustFind(db: Db, ref: string): Promise<GroupRow> {
  const g = await findGroup(db, ref);
  if (!g) throw new OperationError(`Subcloud group ${ref} does not exist`);
  return g;
}

function notFound(ref: string): never {
  throw new OperationError(`Subcloud group ${ref} does not exist`);
}

/** The window's stored text (null: none) and zone, checked before the file is opened: bad ones are usage errors. */
function windowOf(input: GroupInput): { window: string | null | undefined; tz: string | undefined } {
  const text = input.maintenanceWindow;
  const window = text === undefined ? undefined : text.trim().toLowerCase() === 'none' ? null : parseMaintenanceWindow(text).text;
  return { window, tz: input.maintenanceTz === undefined ? undefined : checkTimeZone(input.maintenanceTz) };
}

/**
 * The server's checks of a new group, in its order and words (SubcloudGroupsController.post), with
 * the client's defaults; then dcm's own of a name (control characters and the like).
 */
function checkNewGroup(input: GroupInput & { name: string }): { description: string; updateApplyType: ApplyType } {
  if (!groupNameValid(input.name)) throw new OperationError(INVALID_NAME);
  const description = input.description ?? 'No description provided';
  if (!groupDescriptionValid(description)) throw new OperationError(INVALID_DESCRIPTION);
  const updateApplyType = groupApplyType(input.updateApplyType ?? 'parallel');
  if (!updateApplyType) throw new OperationError(INVALID_APPLY_TYPE);
  checkGroupName(input.name);
  return { description, updateApplyType };
}

export async function groupAdd(ctx: Ctx, input: GroupInput & { name: string }): Promise<Outcome> {
  const checked = checkNewGroup(input);
  const gates = groupGateInput(input);
  const rate = parseStartRateOptions(input, true);
  const mw = windowOf(input);
  const result = await withWriteDb(ctx, async (db) =>
    await immediate(db, async (tx) => {
      if (await findGroup(tx, input.name)) throw new OperationError(`Subcloud group ${input.name} already exists`);
      const id = await insertGroup(tx, {
        name: input.name,
        description: checked.description,
        updateApplyType: checked.updateApplyType,
        maxParallelSubclouds: input.maxParallelSubclouds ?? 2,
        maintenanceWindow: mw.window ?? null,
        maintenanceTz: mw.tz ?? null,
      });
      if (gates) await setGroupGateDefaults(tx, id, gates);
      if (rate !== undefined) await setGroupStartRate(tx, id, storeStartRate(rate));
      return { kind: 'group' as const, row: await mustFind(tx, String(id)) };
    }),
  );
  return { result, notes: [...(gates ? [await gateNote(ctx, result.row.id, result.row.name)] : []), ...(rate !== undefined ? [rateNote(result.row.name, rate)] : [])] };
}

/** The stage gate options of a group, checked on their own; undefined when none was given. */
function groupGateInput(input: GroupInput): { maxFailures?: string; gate?: string } | undefined {
  if (input.stageMaxFailures === undefined && input.stageGate === undefined) return undefined;
  return {
    maxFailures: input.stageMaxFailures === undefined ? undefined : formatStageMaxFailures(parseStageMaxFailures(input.stageMaxFailures)),
    gate: input.stageGate === undefined ? undefined : formatStageGate(parseStageGate(input.stageGate)),
  };
}

/** The group's record is dcmanager's: its default start rate is said on stderr. */
function rateNote(name: string, rate: StartRate | null): string {
  return `start rate default of group ${name}: ${rate ? formatStartRate(rate) : 'none'} (a strategy created from now on without --start-rate takes it)`;
}

/** The group's record is dcmanager's: its stage gate defaults are said on stderr. */
async function gateNote(ctx: Ctx, id: number, name: string): Promise<string> {
  const d = await withReadDb(ctx, null, (db) => groupGateDefaults(db, id));
  return `stage gate defaults of group ${name}: stage max failures ${d?.max_failures ?? 'none'}, stage gate ${d?.gate ?? 'none'} (a strategy created from now on takes them)`;
}

export async function groupList_(ctx: Ctx): Promise<CommandResult> {
  return { kind: 'groups', rows: await withReadDb(ctx, null, (db) => listGroups(db)) ?? [DEFAULT_UNCREATED] };
}

export async function groupShow_(ctx: Ctx, ref: string): Promise<CommandResult> {
  const row = await withReadDb(ctx, null, (db) => mustFind(db, ref)) ?? (isDefault(ref) ? DEFAULT_UNCREATED : notFound(ref));
  return { kind: 'group', row };
}

function isDefault(ref: string): boolean {
  return ref === 'Default' || ref === '1';
}

/**
 * A file that does not exist yet still has the Default group, as every dcm file does (it has no
 * creation time yet).
 */
export const DEFAULT_UNCREATED: GroupRecord = {
  id: 1,
  name: 'Default',
  description: 'Default Subcloud Group',
  update_apply_type: 'parallel',
  max_parallel_subclouds: 2,
  maintenance_window: null,
  maintenance_tz: null,
  created_at: null,
  updated_at: null,
};

/**
 * A strategy keeps the windows it was created with (strategy_stage): a group's new window
 * changes nothing of it, which is said rather than left to be found out (SPEC §4).
 */
export async function groupUpdateWarned(ctx: Ctx, ref: string, input: GroupInput): Promise<{ result: CommandResult; warnings: string[]; notes: string[] }> {
  const result = await groupUpdate(ctx, ref, input);
  const warnings: string[] = [];
  const notes = groupGateInput(input) && result.kind === 'group' ? [await gateNote(ctx, result.row.id, result.row.name)] : [];
  const rate = parseStartRateOptions(input, true);
  if (rate !== undefined && result.kind === 'group') notes.push(rateNote(result.row.name, rate));
  if (input.maxParallelSubclouds !== undefined && await withReadDb(ctx, false, async (db) => (await getStrategy(db)) !== undefined)) {
    warnings.push(
      'the strategy keeps the windows it was created with; to change them while it exists: ' +
        'dcm strategy update --max-parallel-subclouds N [--stage K]',
    );
  }
  if (
    (input.maintenanceWindow !== undefined || input.maintenanceTz !== undefined) &&
    await withReadDb(ctx, false, async (db) => ['applying', 'paused', 'abort requested', 'aborting'].includes((await getStrategy(db))?.state ?? ''))
  ) {
    // The orchestrator reads the windows as it starts and on resume, never polls them.
    warnings.push('a running `dcm strategy apply` reads the maintenance windows as it starts and on `dcm strategy resume`: pause and resume it to have this one count');
  }
  return { result, warnings, notes };
}

export async function groupUpdate(ctx: Ctx, ref: string, input: GroupInput): Promise<CommandResult> {
  const changes: Parameters<typeof updateGroup>[2] = {};
  // The client sends only what is given and not empty; the server checks each in this order
  // (SubcloudGroupsController.patch), then dcm its own of a name.
  if (input.name) {
    if (!groupNameValid(input.name)) throw new OperationError(INVALID_NAME);
    checkGroupName(input.name);
    changes.name = input.name;
  }
  if (input.description) {
    if (!groupDescriptionValid(input.description)) throw new OperationError(INVALID_DESCRIPTION);
    changes.description = input.description;
  }
  if (input.updateApplyType) {
    const type = groupApplyType(input.updateApplyType);
    if (!type) throw new OperationError(INVALID_APPLY_TYPE);
    changes.update_apply_type = type;
  }
  if (input.maxParallelSubclouds !== undefined) changes.max_parallel_subclouds = input.maxParallelSubclouds;
  const gates = groupGateInput(input);
  const rate = parseStartRateOptions(input, true);
  const mw = windowOf(input);
  if (mw.window !== undefined) changes.maintenance_window = mw.window;
  if (mw.tz !== undefined) changes.maintenance_tz = mw.tz;
  if (Object.keys(changes).length === 0 && !gates && rate === undefined) throw new OperationError('Nothing to update');
  const reason = checkReason(input.reason);
  return await withWriteDb(ctx, async (db) =>
    await immediate(db, async (tx) => {
      const g = await mustFind(tx, ref);
      if (changes.name !== undefined && g.id === 1) throw new OperationError('Default group name cannot be changed');
      const clash = changes.name !== undefined ? await findGroup(tx, changes.name) : undefined;
      if (clash && clash.id !== g.id) throw new OperationError(`Subcloud group ${changes.name} already exists`);
      if (Object.keys(changes).length) await updateGroup(tx, g.id, changes);
      if (gates) await setGroupGateDefaults(tx, g.id, gates);
      if (rate !== undefined) await setGroupStartRate(tx, g.id, storeStartRate(rate));
      // During a strategy a group's change is part of its story (a window widened, a maintenance
      // window moved): recorded with the strategy, old -> new, and the operator's words.
      if (await getStrategy(tx)) {
        const was = g as unknown as Record<string, unknown>;
        const said = Object.entries(changes).map(([k, v]) => `${k.replace(/_/g, ' ')}: ${was[k] ?? 'None'} -> ${v ?? 'None'}`);
        if (gates?.maxFailures !== undefined) said.push(`stage max failures default: ${gates.maxFailures}`);
        if (gates?.gate !== undefined) said.push(`stage gate default: ${gates.gate}`);
        if (rate !== undefined) said.push(`start rate default: ${rate ? formatStartRate(rate) : 'none'}`);
        await recordEvent(tx, whoAmI(), EVENTS.groupUpdated, `group ${g.name}: ${said.join('; ')}`, reason);
      }
      return { kind: 'group', row: await mustFind(tx, String(g.id)) };
    }),
  );
}

export async function groupDelete(ctx: Ctx, ref: string): Promise<CommandResult> {
  return await withWriteDb(ctx, async (db) =>
    await immediate(db, async (tx) => {
      const g = await mustFind(tx, ref);
      if (g.id === 1) throw new OperationError('Default subcloud group may not be deleted');
      const n = await countSubcloudsInGroup(tx, g.id);
      if (n > 0) throw new OperationError(`Subcloud group ${g.name} has ${n} subcloud(s) and may not be deleted`);
      await deleteGroup(tx, g.id);
      return { kind: 'nothing' };
    }),
  );
}

export async function groupListSubclouds(ctx: Ctx, ref: string): Promise<CommandResult> {
  const rows = await withReadDb(ctx, null, async (db) => await listSubclouds(db, (await mustFind(db, ref)).id)) ?? (isDefault(ref) ? [] : notFound(ref));
  return { kind: 'group-subclouds', rows };
}
