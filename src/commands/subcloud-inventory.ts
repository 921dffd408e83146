/** `dcm subcloud inventory --ansible`: the fleet as an inventory for another tool. */
import { ansibleInventory, type AnsibleInventory } from '../domain/ansible.js';
import { readLabels, type LabelSelector, type Labels } from '../domain/inventory.js';
import { OperationError } from '../domain/errors.js';
import { findGroup } from '../store/groups.js';
import { iterateSubclouds, type SubcloudRow } from '../store/subclouds.js';
import { withReadDb, type Ctx } from './context.js';
// dcmanager hides these from `subcloud list` unless `--all`: so does the inventory.
import { SECONDARY } from './subclouds.js';

export async function subcloudInventory(
  ctx: Ctx,
  opts: { group?: string; all?: boolean; labels?: LabelSelector } = {},
): Promise<AnsibleInventory> {
  const empty = ansibleInventory([]);
  return await withReadDb(ctx, empty, async (db) => {
    let groupId: number | undefined;
    if (opts.group !== undefined) {
      const g = await findGroup(db, opts.group);
      if (!g) throw new OperationError(`Subcloud group ${opts.group} does not exist`);
      groupId = g.id;
    }
    const rows: { row: SubcloudRow; labels: Labels }[] = [];
    for await (const row of iterateSubclouds(db, groupId, Boolean(opts.all), SECONDARY, opts.labels)) rows.push({ row, labels: readLabels(row.labels) });
    return ansibleInventory(rows);
  });
}
