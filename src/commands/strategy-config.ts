/**
 * `dcm strategy-config …`: dcmanager's sw-update-options (SPEC §4). Without a cloud, or with
 * `RegionOne`/`SystemController` as dcmanager's API takes them, a command means the default row.
 * Wording and behaviour follow dcmanager's API and client: a subcloud without its own row has
 * nothing to show or delete (its steps use the default), and deleting the default puts the
 * built-in defaults back.
 */
import { OperationError } from '../domain/errors.js';
import { BUILTIN_DEFAULTS, DEFAULT_CLOUD, isDefaultRef, type ConfigOptions } from '../domain/strategy-config.js';
import {
  deleteDefaultConfig,
  deleteSubcloudConfig,
  getDefaultConfig,
  getSubcloudConfig,
  listSubcloudConfigs,
  subcloudByRef,
  upsertDefaultConfig,
  upsertSubcloudConfig,
  type ConfigRow,
} from '../store/strategy-config.js';
import type { Db } from '../store/open.js';
import { immediate, withExistingWriteDb, withReadDb, withWriteDb, type Ctx } from './context.js';
import { list, show, type ListResult, type ShowResult } from './plain-results.js';

/** `list`'s columns, in dcmanager's client's order; `show` and `update` add the two times. */
export const CONFIG_COLUMNS = [
  'cloud',
  'storage apply type',
  'worker apply type',
  'max parallel workers',
  'alarm restriction type',
  'default instance action',
];

function listRow(r: ConfigRow): (string | number | null)[] {
  return [r.cloud, r.storage_apply_type, r.worker_apply_type, r.max_parallel_workers, r.alarm_restriction_type, r.default_instance_action];
}

export function configShow(r: ConfigRow): ShowResult {
  const values = [...listRow(r), r.created_at, r.updated_at];
  return show([...CONFIG_COLUMNS, 'created_at', 'updated_at'].map((k, i) => [k, values[i]]));
}

export function configList(rows: ConfigRow[]): ListResult {
  return list(CONFIG_COLUMNS, rows.map(listRow));
}

/** The default row as dcmanager reports it: the stored one, else the built-in defaults. */
async function defaultRow(db: Db | null): Promise<ConfigRow> {
  const stored = db ? await getDefaultConfig(db) : undefined;
  return { cloud: DEFAULT_CLOUD, ...(stored ?? { ...BUILTIN_DEFAULTS, created_at: null, updated_at: null }) };
}

function subcloudNotFound(): never {
  throw new OperationError('Subcloud not found');
}

export async function configUpdate(ctx: Ctx, cloud: string | undefined, options: ConfigOptions): Promise<ShowResult> {
  return await withWriteDb(ctx, async (db) =>
    await immediate(db, async (tx) => {
      if (isDefaultRef(cloud)) {
        await upsertDefaultConfig(tx, options);
        return configShow(await defaultRow(tx));
      }
      const sc = await subcloudByRef(tx, cloud!);
      if (!sc) throw new OperationError(`Unable to update patch options for subcloud ${cloud}: Subcloud not found`);
      await upsertSubcloudConfig(tx, sc.id, options);
      return configShow((await getSubcloudConfig(tx, sc.id))!);
    }),
  );
}

/** The default row first, then every subcloud with its own row, in subcloud order. */
export async function configListAll(ctx: Ctx): Promise<ListResult> {
  return await withReadDb(ctx, configList([await defaultRow(null)]), async (db) => configList([await defaultRow(db), ...(await listSubcloudConfigs(db))]));
}

export async function configShowOne(ctx: Ctx, cloud: string | undefined): Promise<ShowResult> {
  if (isDefaultRef(cloud)) return await withReadDb(ctx, configShow(await defaultRow(null)), async (db) => configShow(await defaultRow(db)));
  return (await withReadDb(ctx, null, async (db) => {
    const sc = await subcloudByRef(db, cloud!) ?? subcloudNotFound();
    const row = await getSubcloudConfig(db, sc.id);
    if (!row) throw new OperationError(`No options found for Subcloud with id ${sc.id}, defaults will be used.`);
    return configShow(row);
  })) ?? subcloudNotFound();
}

/** The current client's words for a refused delete; the reason after them is the server's. */
const UNABLE_TO_DELETE = 'Unable to delete strategy config';

/** Prints nothing, as dcmanager's client. A file that does not exist has no row to delete. */
export async function configDelete(ctx: Ctx, cloud: string): Promise<void> {
  // Nothing is printed, so there is no result for `-c` to check.
  const done = await withExistingWriteDb({ dbPath: ctx.dbPath }, async (db) => {
    if (isDefaultRef(cloud)) {
      await deleteDefaultConfig(db);
      return true;
    }
    const sc = await subcloudByRef(db, cloud);
    if (!sc) throw new OperationError(`${UNABLE_TO_DELETE}: Subcloud not found`);
    if (!await deleteSubcloudConfig(db, sc.id)) throw new OperationError(`${UNABLE_TO_DELETE}: Subcloud patch options not found`);
    return true;
  });
  if (!done && !isDefaultRef(cloud)) throw new OperationError(`${UNABLE_TO_DELETE}: Subcloud not found`);
}
