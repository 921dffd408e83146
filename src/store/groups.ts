/** Queries of the subcloud_group table. */
import type { Db } from './open.js';
import { sql } from './statements.js';
import { now } from './clock.js';
import type { ApplyType } from '../domain/types.js';

export interface GroupRow {
  id: number;
  name: string;
  description: string | null;
  update_apply_type: ApplyType;
  max_parallel_subclouds: number;
  created_at: string;
  updated_at: string | null;
}

export function listGroups(db: Db): GroupRow[] {
  return sql(db, 'SELECT * FROM subcloud_group ORDER BY id').all() as GroupRow[];
}

/** By name, or by id when the text is a number (dcmanager accepts both). */
export function findGroup(db: Db, ref: string): GroupRow | undefined {
  const byName = sql(db, 'SELECT * FROM subcloud_group WHERE name = ?').get(ref) as GroupRow | undefined;
  if (byName || !/^\d+$/.test(ref)) return byName;
  return sql(db, 'SELECT * FROM subcloud_group WHERE id = ?').get(Number(ref)) as GroupRow | undefined;
}

export function insertGroup(
  db: Db,
  g: { name: string; description: string | null; updateApplyType: ApplyType; maxParallelSubclouds: number },
): number {
  const r = sql(
    db,
    `INSERT INTO subcloud_group (name, description, update_apply_type, max_parallel_subclouds, created_at)
     VALUES (?, ?, ?, ?, ?)`,
  )
    .run(g.name, g.description, g.updateApplyType, g.maxParallelSubclouds, now());
  return Number(r.lastInsertRowid);
}

export function updateGroup(
  db: Db,
  id: number,
  changes: Partial<{ name: string; description: string; update_apply_type: ApplyType; max_parallel_subclouds: number }>,
): void {
  const keys = Object.keys(changes) as (keyof typeof changes)[];
  const sets = keys.map((k) => `${k} = @${k}`).join(', ');
  sql(db, `UPDATE subcloud_group SET ${sets}, updated_at = @updated_at WHERE id = @id`).run({
    ...changes,
    updated_at: now(),
    id,
  });
}

export function deleteGroup(db: Db, id: number): void {
  sql(db, 'DELETE FROM subcloud_group WHERE id = ?').run(id);
}

export function countSubcloudsInGroup(db: Db, id: number): number {
  return (sql(db, 'SELECT count(*) AS n FROM subcloud WHERE group_id = ?').get(id) as { n: number }).n;
}
