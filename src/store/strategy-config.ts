/** Queries of the strategy_config (per subcloud) and strategy_config_default tables. */
import type { Db } from './open.js';
import { sql } from './statements.js';
import { now } from './clock.js';
import { pickOptions, type ConfigOptions } from '../domain/strategy-config.js';

/** A row as stored, with the name of the cloud it belongs to. */
export interface ConfigRow extends ConfigOptions {
  cloud: string;
  created_at: string | null;
  updated_at: string | null;
}

const FIELDS = 'storage_apply_type, worker_apply_type, max_parallel_workers, alarm_restriction_type, default_instance_action';

export async function getDefaultConfig(db: Db): Promise<(ConfigOptions & { created_at: string | null; updated_at: string | null }) | undefined> {
  return (await sql(db, `SELECT ${FIELDS}, created_at, updated_at FROM strategy_config_default WHERE id = 1`).get()) as
    | (ConfigOptions & { created_at: string | null; updated_at: string | null })
    | undefined;
}

/** Update the default row, or create it again after a delete (dcmanager's update-or-create). */
export async function upsertDefaultConfig(db: Db, o: ConfigOptions): Promise<void> {
  const at = now(db);
  const changed = (await sql(
    db,
    `UPDATE strategy_config_default SET storage_apply_type = $1, worker_apply_type = $2,
       max_parallel_workers = $3, alarm_restriction_type = $4, default_instance_action = $5, updated_at = $6 WHERE id = 1`,
  ).run(...values(o), at)).changes;
  if (changed === 0) {
    await sql(db, `INSERT INTO strategy_config_default (id, ${FIELDS}, created_at) VALUES (1, $1, $2, $3, $4, $5, $6)`).run(
      ...values(o),
      at,
    );
  }
}

/** Remove the default row: the built-in defaults apply until the next update. */
export async function deleteDefaultConfig(db: Db): Promise<void> {
  await sql(db, 'DELETE FROM strategy_config_default WHERE id = 1').run();
}

export async function getSubcloudConfig(db: Db, subcloudId: number): Promise<ConfigRow | undefined> {
  return (await sql(
    db,
    `SELECT sc.name AS cloud, ${prefixed('c')}, c.created_at, c.updated_at
     FROM strategy_config c JOIN subcloud sc ON sc.id = c.subcloud_id WHERE c.subcloud_id = $1`,
  ).get(subcloudId)) as ConfigRow | undefined;
}

/** Create or update a subcloud's own row. */
export async function upsertSubcloudConfig(db: Db, subcloudId: number, o: ConfigOptions): Promise<void> {
  const at = now(db);
  await sql(
    db,
    `INSERT INTO strategy_config (subcloud_id, ${FIELDS}, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT(subcloud_id) DO UPDATE SET storage_apply_type = excluded.storage_apply_type,
       worker_apply_type = excluded.worker_apply_type, max_parallel_workers = excluded.max_parallel_workers,
       alarm_restriction_type = excluded.alarm_restriction_type,
       default_instance_action = excluded.default_instance_action, updated_at = excluded.created_at`,
  ).run(subcloudId, ...values(o), at);
}

/** True when the subcloud had a row of its own. */
export async function deleteSubcloudConfig(db: Db, subcloudId: number): Promise<boolean> {
  return (await sql(db, 'DELETE FROM strategy_config WHERE subcloud_id = $1').run(subcloudId)).changes === 1;
}

/** Every subcloud's own row, in subcloud id order (dcmanager lists them in subcloud order). */
export async function listSubcloudConfigs(db: Db): Promise<ConfigRow[]> {
  return (await sql(
    db,
    `SELECT sc.name AS cloud, ${prefixed('c')}, c.created_at, c.updated_at
     FROM strategy_config c JOIN subcloud sc ON sc.id = c.subcloud_id ORDER BY c.subcloud_id`,
  ).all()) as ConfigRow[];
}

/** The options of every subcloud with a row of its own, by subcloud id (few: one per override). */
export async function subcloudOptions(db: Db): Promise<[number, ConfigOptions][]> {
  const rows = await sql(db, `SELECT subcloud_id, ${FIELDS} FROM strategy_config`).all() as (ConfigOptions & { subcloud_id: number })[];
  return rows.map(({ subcloud_id, ...o }) => [subcloud_id, o]);
}

const pick = pickOptions;

function values(o: ConfigOptions): (string | number)[] {
  const p = pick(o);
  return [p.storage_apply_type, p.worker_apply_type, p.max_parallel_workers, p.alarm_restriction_type, p.default_instance_action];
}

function prefixed(alias: string): string {
  return FIELDS.split(', ')
    .map((f) => `${alias}.${f}`)
    .join(', ');
}

/**
 * A subcloud named as dcmanager's API takes it: all digits is an id, anything else a name. A name
 * made of digits (dcm allows one) is found by name when no subcloud has that id.
 */
export async function subcloudByRef(db: Db, ref: string): Promise<{ id: number; name: string } | undefined> {
  if (/^\d+$/.test(ref)) {
    const byId = await sql(db, 'SELECT id, name FROM subcloud WHERE id = $1').get(Number(ref)) as { id: number; name: string } | undefined;
    if (byId) return byId;
  }
  return (await sql(db, 'SELECT id, name FROM subcloud WHERE name = $1').get(ref)) as { id: number; name: string } | undefined;
}
