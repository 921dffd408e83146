/** `dcm subcloud …`: the fleet inventory. */
import fs from 'node:fs';
import { OperationError } from '../domain/errors.js';
import { checkName, type SubcloudInput } from '../domain/inventory.js';
import { parseImport } from '../domain/importfile.js';
import { findGroup } from '../store/groups.js';
import type { Db } from '../store/open.js';
import {
  deleteSubcloud,
  existingNames,
  findSubcloud,
  hasStep,
  insertSubclouds,
  listSubclouds,
  updateSubcloud,
  type SubcloudFields,
} from '../store/subclouds.js';
import { immediate, withReadDb, withWriteDb, type Ctx } from './context.js';
import { subcloudList, subcloudShow, SUBCLOUD_COLUMNS } from './views.js';
import { list, type Result } from '../cli/output/result.js';

function groupId(db: Db, ref: string): number {
  const g = findGroup(db, ref);
  if (!g) throw new OperationError(`Subcloud group ${ref} does not exist`);
  return g.id;
}

/** Input fields to stored fields: the group reference becomes its id. */
function toStored(db: Db, input: SubcloudInput): SubcloudFields {
  const { group, ...rest } = input;
  return group === undefined ? rest : { ...rest, group_id: groupId(db, group) };
}

function addRows(db: Db, rows: { name: string; fields: SubcloudInput; line?: number }[]): void {
  const taken = existingNames(db, rows.map((r) => r.name));
  if (taken.length) {
    const row = rows.find((r) => r.name === taken[0])!;
    throw new OperationError(`${row.line ? `line ${row.line}: ` : ''}Subcloud ${taken[0]} already exists`);
  }
  insertSubclouds(
    db,
    rows.map((r) => {
      try {
        return { name: r.name, fields: toStored(db, r.fields) };
      } catch (err) {
        if (r.line && err instanceof OperationError) throw new OperationError(`line ${r.line}: ${err.message}`);
        throw err;
      }
    }),
  );
}

export async function subcloudAdd(ctx: Ctx, names: string[], input: SubcloudInput): Promise<Result> {
  names.forEach((n) => checkName('subcloud', n));
  const seen = new Set<string>();
  const dup = names.find((n) => seen.size === seen.add(n).size);
  if (dup) throw new OperationError(`Subcloud ${dup} is given twice`);
  return withWriteDb(ctx, (db) =>
    immediate(db, () => {
      addRows(db, names.map((name) => ({ name, fields: input })));
      const added = new Set(names);
      return subcloudList(listSubclouds(db).filter((r) => added.has(r.name)));
    }),
  );
}

export async function subcloudImport(ctx: Ctx, file: string): Promise<Result> {
  let text: string;
  try {
    text = fs.readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new OperationError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const rows = parseImport(text);
  return withWriteDb(ctx, (db) =>
    immediate(db, () => {
      addRows(db, rows);
      return list(['imported'], [[rows.length]]);
    }),
  );
}

export async function subcloudList_(ctx: Ctx, group?: string): Promise<Result> {
  return withReadDb(ctx, list(SUBCLOUD_COLUMNS, []), (db) => {
    if (group === undefined) return subcloudList(listSubclouds(db));
    return subcloudList(listSubclouds(db, groupId(db, group)));
  });
}

function mustFind(db: Db, name: string) {
  const sc = findSubcloud(db, name);
  if (!sc) throw new OperationError(`Subcloud ${name} does not exist`);
  return sc;
}

export async function subcloudShow_(ctx: Ctx, name: string): Promise<Result> {
  const result = withReadDb(ctx, null, (db) => subcloudShow(mustFind(db, name)));
  if (!result) throw new OperationError(`Subcloud ${name} does not exist`);
  return result;
}

export async function subcloudUpdate(ctx: Ctx, names: string[], input: SubcloudInput): Promise<Result> {
  if (Object.keys(input).length === 0) throw new OperationError('Nothing to update');
  return withWriteDb(ctx, (db) =>
    immediate(db, () => {
      const rows = names.map((n) => mustFind(db, n));
      const fields = toStored(db, input);
      for (const r of rows) updateSubcloud(db, r.id, fields);
      const changed = new Set(names);
      return subcloudList(listSubclouds(db).filter((r) => changed.has(r.name)));
    }),
  );
}

export async function subcloudDelete(ctx: Ctx, names: string[]): Promise<Result> {
  return withWriteDb(ctx, (db) =>
    immediate(db, () => {
      const rows = names.map((n) => mustFind(db, n));
      for (const r of rows) {
        if (hasStep(db, r.id)) {
          throw new OperationError(`Subcloud ${r.name} has a step in the current strategy; delete the strategy first`);
        }
      }
      for (const r of rows) deleteSubcloud(db, r.id);
      return subcloudList(rows);
    }),
  );
}
