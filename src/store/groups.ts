/** Queries of the subcloud_group table. */
import type { Db } from './open.js';
import { Params, sql } from './statements.js';
import { now } from './clock.js';
import type { ApplyType } from '../domain/types.js';

export interface GroupRow {
  id: number;
  name: string;
  description: string | null;
  update_apply_type: ApplyType;
  max_parallel_subclouds: number;
  /** Normalised text (domain/maintenance.ts), or null: no window, a subcloud starts whenever its turn comes. */
  maintenance_window: string | null;
  /** The window's IANA zone; null: UTC. */
  maintenance_tz: string | null;
  created_at: string;
  updated_at: string | null;
}

export async function listGroups(db: Db): Promise<GroupRow[]> {
  return (await sql(db, 'SELECT * FROM subcloud_group ORDER BY id').all()) as GroupRow[];
}

/** By name, or by id when the text is a number (dcmanager accepts both). */
export async function findGroup(db: Db, ref: string): Promise<GroupRow | undefined> {
  const byName = await sql(db, 'SELECT * FROM subcloud_group WHERE name = $1').get(ref) as GroupRow | undefined;
  if (byName || !/^\d+$/.test(ref)) return byName;
  return (await sql(db, 'SELECT * FROM subcloud_group WHERE id = $1').get(Number(ref))) as GroupRow | undefined;
}

export async function insertGroup(
  db: Db,
  g: {
    name: string;
    description: string | null;
    updateApplyType: ApplyType;
    maxParallelSubclouds: number;
    maintenanceWindow?: string | null;
    maintenanceTz?: string | null;
  },
): Promise<number> {
  const r = await sql(
    db,
    `INSERT INTO subcloud_group (name, description, update_apply_type, max_parallel_subclouds, maintenance_window, maintenance_tz, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
  )
    .pluck()
    .get(g.name, g.description, g.updateApplyType, g.maxParallelSubclouds, g.maintenanceWindow ?? null, g.maintenanceTz ?? null, now(db));
  return Number(r);
}

export async function updateGroup(
  db: Db,
  id: number,
  changes: Partial<{
    name: string;
    description: string;
    update_apply_type: ApplyType;
    max_parallel_subclouds: number;
    maintenance_window: string | null;
    maintenance_tz: string | null;
  }>,
): Promise<void> {
  const keys = Object.keys(changes) as (keyof typeof changes)[];
  const p = new Params();
  const sets = keys.map((k) => `${k} = ${p.add(changes[k])}`).join(', ');
  await sql(db, `UPDATE subcloud_group SET ${sets}, updated_at = ${p.add(now(db))} WHERE id = ${p.add(id)}`).run(...p.values);
}

export async function deleteGroup(db: Db, id: number): Promise<void> {
  await sql(db, 'DELETE FROM subcloud_group WHERE id = $1').run(id);
}

export async function countSubcloudsInGroup(db: Db, id: number): Promise<number> {
  return (await sql(db, 'SELECT count(*) AS n FROM subcloud WHERE group_id = $1').get(id) as { n: number }).n;
}

/** A group's maintenance window, as the orchestrator and `strategy status` read it. */
export interface GroupWindowRow {
  id: number;
  name: string;
  maintenance_window: string;
  maintenance_tz: string | null;
}

/** The groups that have a maintenance window (most files: none). */
export async function groupsWithWindows(db: Db): Promise<GroupWindowRow[]> {
  return (await sql(db, 'SELECT id, name, maintenance_window, maintenance_tz FROM subcloud_group WHERE maintenance_window IS NOT NULL ORDER BY id').all()) as GroupWindowRow[];
}

/** The subclouds of these groups, by id: the group each is in. */
export async function subcloudGroupsOf(db: Db, groupIds: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (groupIds.length === 0) return out;
  const p = new Params();
  const rows = await sql(db, `SELECT id, group_id FROM subcloud WHERE group_id IN (${p.list(groupIds)})`).all(...p.values) as {
    id: number;
    group_id: number;
  }[];
  for (const r of rows) out.set(r.id, r.group_id);
  return out;
}

/** Steps not started (`initial`) of the strategy, by the group of their subcloud, for these groups. */
export async function initialStepsByGroup(db: Db, groupIds: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (groupIds.length === 0) return out;
  const p = new Params();
  const rows = await sql(
    db,
    `SELECT sc.group_id AS id, count(*) AS n FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id
     WHERE st.state = 'initial' AND sc.group_id IN (${p.list(groupIds)}) GROUP BY sc.group_id`,
  ).all(...p.values) as { id: number; n: number }[];
  for (const r of rows) out.set(r.id, r.n);
  return out;
}
