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
  findSubcloudByRef,
  hasStep,
  insertSubclouds,
  iterateSubclouds,
  listSubclouds,
  updateSubcloud,
  type SubcloudFields,
} from '../store/subclouds.js';
import { immediate, readRows, withReadDb, withWriteDb, type Ctx } from './context.js';
import type { CommandResult } from './results.js';

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

export async function subcloudAdd(ctx: Ctx, names: string[], input: SubcloudInput): Promise<CommandResult> {
  names.forEach((n) => checkName('subcloud', n));
  const seen = new Set<string>();
  const dup = names.find((n) => seen.size === seen.add(n).size);
  if (dup) throw new OperationError(`Subcloud ${dup} is given twice`);
  return withWriteDb(ctx, (db) =>
    immediate(db, () => {
      addRows(db, names.map((name) => ({ name, fields: input })));
      const added = new Set(names);
      return { kind: 'subclouds', rows: listSubclouds(db).filter((r) => added.has(r.name)), detail: false };
    }),
  );
}

export async function subcloudImport(ctx: Ctx, file: string): Promise<CommandResult> {
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
      return { kind: 'imported', count: rows.length };
    }),
  );
}

/** dcmanager hides subclouds of these deploy statuses unless `--all` is given. */
const SECONDARY = ['secondary', 'secondary-failed'];

export async function subcloudList_(
  ctx: Ctx,
  opts: { group?: string; all?: boolean; detail?: boolean } = {},
): Promise<CommandResult> {
  // Read as printed: the group is looked up when the listing starts, before anything is written.
  const rows = readRows(ctx, (db) => iterateSubclouds(db, opts.group === undefined ? undefined : groupId(db, opts.group), Boolean(opts.all), SECONDARY));
  return { kind: 'subclouds', rows, detail: Boolean(opts.detail) };
}

/** A subcloud by name, or by id when all digits (see findSubcloudByRef). */
export function mustFind(db: Db, name: string) {
  const sc = findSubcloudByRef(db, name);
  if (!sc) throw new OperationError(`Subcloud ${name} does not exist`);
  return sc;
}

export async function subcloudShow_(ctx: Ctx, name: string, detail = false): Promise<CommandResult> {
  const row = withReadDb(ctx, null, (db) => mustFind(db, name));
  if (!row) throw new OperationError(`Subcloud ${name} does not exist`);
  return { kind: 'subcloud', row, detail };
}

export async function subcloudUpdate(ctx: Ctx, names: string[], input: SubcloudInput): Promise<CommandResult> {
  if (Object.keys(input).length === 0) throw new OperationError('Nothing to update');
  return withWriteDb(ctx, (db) =>
    immediate(db, () => {
      const rows = names.map((n) => mustFind(db, n));
      const fields = toStored(db, input);
      for (const r of rows) updateSubcloud(db, r.id, fields);
      // One name: the subcloud as `show` prints it, as dcmanager's `subcloud update` does.
      if (names.length === 1) return { kind: 'subcloud', row: mustFind(db, String(rows[0].id)), detail: false };
      const changed = new Set(rows.map((r) => r.id));
      return { kind: 'subclouds', rows: listSubclouds(db).filter((r) => changed.has(r.id)), detail: false };
    }),
  );
}

export async function subcloudDelete(ctx: Ctx, names: string[]): Promise<CommandResult> {
  return withWriteDb(ctx, (db) =>
    immediate(db, () => {
      const rows = names.map((n) => mustFind(db, n));
      for (const r of rows) {
        if (hasStep(db, r.id)) {
          throw new OperationError(`Subcloud ${r.name} has a step in the current strategy; delete the strategy first`);
        }
      }
      for (const r of rows) deleteSubcloud(db, r.id);
      return { kind: 'nothing' };
    }),
  );
}
