/**
 * The subcloud commands dcmanager scripts call beyond the inventory: `manage`, `unmanage`,
 * `errors`, `prestage`, and `alarm summary`. They print what dcmanager's client prints for them
 * (its subcloud_manager and alarm_manager command classes).
 */
import { ClientCheckError, OperationError } from '../domain/errors.js';
import type { RawDriverOptions, RawTypeOptions } from '../domain/options.js';
import { STRATEGY_ENDED } from '../domain/types.js';
import { getStrategy } from '../store/strategy.js';
import { sql } from '../store/statements.js';
import { listSubclouds, updateSubcloud } from '../store/subclouds.js';
import type { Db } from '../store/open.js';
import type { Outcome } from './results.js';
import type { RunCtx } from './context.js';
import { immediate, withReadDb, withWriteDb, type Ctx } from './context.js';
import { mustFind, SECONDARY } from './subclouds.js';
import { systemControllerRelease } from './system-controller.js';
import { prestageReleaseRefusal, prestageSubcloudRefusal } from '../domain/prestage-rules.js';
import type { SubcloudRow } from './results.js';
import { takenOutWarning } from './taken-out.js';
import { strategyCreate, strategyDelete } from './strategy.js';
import { strategyApply } from './apply.js';
import type { CommandResult } from './results.js';
import { list, type Result } from './plain-results.js';

/** A strategy whose orchestrator may be driving steps (or will, on resume). */
const RUNNING = ['applying', 'paused', 'abort requested', 'aborting'];

/**
 * The subcloud's step while the strategy drives it (its state, and the strategy's state and type),
 * else null: a step that has left `initial` and not ended, in a strategy applying (or paused, or
 * aborting).
 */
async function stepInFlight(db: Db, subcloudId: number): Promise<{ state: string; strategy: string } | null> {
  const s = await getStrategy(db);
  if (!s || !RUNNING.includes(s.state)) return null;
  const state = await sql(db, 'SELECT state FROM strategy_step WHERE subcloud_id = $1').pluck().get(subcloudId) as string | undefined;
  if (state === undefined || state === 'initial' || STRATEGY_ENDED.includes(state)) return null;
  return { state, strategy: `${s.state} ${s.type}` };
}

export type ManagementState = 'managed' | 'unmanaged';

/** The deploy status of a subcloud marked for an upcoming migration (`unmanage --migrate`). */
const REHOME_PENDING = 'rehome-pending';

/**
 * `subcloud manage|unmanage REF`: the management state, refused (nothing changed) when it already
 * is that, or while the strategy is driving the subcloud's step: a site half-way through an update
 * must not change hands. Managing needs an online subcloud unless `force` (dcmanager's --force).
 *
 * Rehoming, as the server does it: `unmanage --migrate` records the deploy status
 * `rehome-pending`, refused unless it is `complete` (SubcloudsController._validate_rehome_pending,
 * before any other check; a subcloud already rehome-pending is left as it is), and may mark a
 * subcloud already unmanaged; `manage` of a rehome-pending subcloud records `complete`.
 */
export async function subcloudSetManagement(ctx: Ctx, ref: string, want: ManagementState, force = false, migrate = false): Promise<Outcome> {
  const verb = want === 'managed' ? 'manage' : 'unmanage';
  const warnings: string[] = [];
  const result = await withWriteDb(ctx, async (db) =>
    await immediate(db, async (tx): Promise<CommandResult> => {
      const sc = await mustFind(tx, ref);
      const refuse = (why: string): never => {
        throw new OperationError(`Unable to ${verb} subcloud ${ref}: ${why}`);
      };
      const rehome = migrate && want === 'unmanaged' && sc.deploy_status !== REHOME_PENDING;
      if (rehome && sc.deploy_status !== 'complete') {
        refuse(`The deploy status can only be updated to '${REHOME_PENDING}' if the current deploy status is 'complete'`);
      }
      if (sc.management === want && !rehome) refuse(`Subcloud is already ${want}`);
      const inFlight = await stepInFlight(tx, sc.id);
      if (inFlight) {
        refuse(`its step is in progress in the ${inFlight.strategy} strategy (state ${inFlight.state}); wait until it ends, or abort the strategy`);
      }
      if (want === 'managed' && sc.availability !== 'online' && !force) {
        refuse(`Subcloud is ${sc.availability}; give --force to manage it anyway`);
      }
      const deployStatus = rehome ? REHOME_PENDING : want === 'managed' && sc.deploy_status === REHOME_PENDING ? 'complete' : undefined;
      await updateSubcloud(tx, sc.id, deployStatus ? { management: want, deploy_status: deployStatus } : { management: want });
      // Its step not started yet (or between runs): kept out from now on, and said (issue 49).
      const said = want === 'unmanaged' ? await takenOutWarning(tx, [sc], 'unmanaged') : null;
      if (said) warnings.push(said);
      return { kind: 'subcloud', row: await mustFind(tx, String(sc.id)), detail: false, reply: {} };
    }),
  );
  return { result, warnings };
}

/** What dcmanager's `error_description` holds for a subcloud with no failure. */
export const NO_ERRORS = 'No errors present';

/**
 * `subcloud errors REF`: dcmanager's error_description of the subcloud's last failed operation,
 * which dcm keeps as the details of the subcloud's last failed (or timed-out) run in the step
 * history; plain text, as the client prints it.
 */
export async function subcloudErrors(ctx: Ctx, ref: string): Promise<string> {
  const text = await withReadDb(ctx, null as string | null, async (db) => {
    const sc = await mustFind(db, ref);
    const last = await sql(
      db,
      `SELECT h.state, h.details FROM step_history h JOIN strategy_step st ON st.id = h.step_id
       WHERE st.subcloud_id = $1 AND h.outcome IN ('failed', 'timeout') ORDER BY h.id DESC LIMIT 1`,
    ).get(sc.id) as { state: string; details: string | null } | undefined;
    // As a failed step's details read: `<state>: <reason>`.
    return last ? `${last.state}: ${last.details ?? 'failed'}` : NO_ERRORS;
  });
  if (text === null) throw new OperationError(`Subcloud ${ref} does not exist`);
  return `${text}\n`;
}

/**
 * The server's checks of a subcloud to prestage, in its order and with its words, before any
 * strategy is made: the subcloud controller refuses a secondary subcloud, then
 * validate_prestage_subcloud the release (domain/prestage-rules.ts), then an offline, unmanaged,
 * backing-up or not deployed one, or one prestaging already (`Prestage failed '<name>': <why>`).
 */
function checkPrestageable(sc: SubcloudRow, release: string | undefined, forSwDeploy: boolean, systemController: string | null): void {
  if (SECONDARY.includes(sc.deploy_status)) throw new OperationError(`Cannot perform on ${sc.deploy_status} state subcloud`);
  const why = prestageReleaseRefusal(release, forSwDeploy, systemController) ?? prestageSubcloudRefusal(sc);
  if (why) throw new OperationError(`Prestage failed '${sc.name}': ${why}`);
}

export interface PrestageInput {
  typeOptions: RawTypeOptions;
  driverOptions: RawDriverOptions;
}

/**
 * `subcloud prestage REF`: dcmanager prestages one subcloud at once; dcm does it as a one-subcloud
 * prestage strategy, created and applied by the same commands as any strategy (so it takes their
 * checks: no other strategy may exist, the subcloud must be eligible). A strategy that completed is
 * deleted, leaving the fleet free; one that failed stays, for `strategy-step show` and
 * `subcloud errors`. Prints the server's reply (SubcloudsController.patch, verb prestage): the
 * subcloud as it was read, its prestage_status `prestaging` (set for the reply only, so its
 * updated_at is the old one), and the release prestaged, given or the system controller's, as
 * dcmanager's detail_prestage_format prints it. The exit code says how the prestage ended.
 */
export async function subcloudPrestage(ctx: RunCtx, ref: string, input: PrestageInput): Promise<Outcome> {
  // The client's own check comes before anything is asked of the server.
  if (input.typeOptions.forInstall && input.typeOptions.forSwDeploy) throw new ClientCheckError('Options --for-install and --for-sw-deploy cannot be combined');
  const found = await withReadDb(ctx, null, async (db) => {
    const row = await mustFind(db, ref);
    return { row, systemController: await systemControllerRelease(db) };
  });
  if (!found) throw new OperationError(`Subcloud ${ref} does not exist`);
  const { row: sc, systemController } = found;
  checkPrestageable(sc, input.typeOptions.release, Boolean(input.typeOptions.forSwDeploy), systemController);
  const release = input.typeOptions.release || systemController;
  const reply: CommandResult = { kind: 'subcloud', row: { ...sc, prestage_status: 'prestaging' }, detail: false, reply: { prestageSoftwareVersion: release } };
  // -c names the subcloud's fields, not the strategy's: checked here, not by create and apply.
  ctx.checkResult?.(reply);
  const inner: RunCtx = { ...ctx, checkResult: undefined };
  await strategyCreate(inner, { type: 'prestage', cloudNames: [sc.name], typeOptions: input.typeOptions, driverOptions: input.driverOptions });
  const applied = await strategyApply(inner, 'prestage', {});
  if (applied.exitCode === 0) await strategyDelete(inner, 'prestage');
  return { result: reply, exitCode: applied.exitCode };
}

/**
 * `alarm summary`: dcmanager's alarm audit fills a subcloud's row from its fault manager while the
 * subcloud is managed and online; until then the row holds what the server wrote at add, -1 for
 * every count (the client prints `-`) and `disabled`. dcm reaches no fault manager: a managed,
 * online subcloud is one the audit would reach, with no alarm dcm knows of (0 and `OK`).
 */
export async function alarmSummary(ctx: Ctx): Promise<Result> {
  // The server lists the rows newest first (subcloud_alarms_get_all: order_by(desc(id))); each
  // row is made when its subcloud is added, so in the subclouds' id order reversed. A later
  // --sort-column is a stable sort, so a tie keeps this order, as the client's does.
  const rows = [...await withReadDb(ctx, [], (db) => listSubclouds(db))].sort((a, b) => b.id - a.id);
  const columns = ['NAME', 'CRITICAL_ALARMS', 'MAJOR_ALARMS', 'MINOR_ALARMS', 'WARNINGS', 'STATUS'];
  return list(
    columns,
    rows.map((r) =>
      r.management === 'managed' && r.availability === 'online' ? [r.name, 0, 0, 0, 0, 'OK'] : [r.name, '-', '-', '-', '-', 'disabled'],
    ),
  );
}
