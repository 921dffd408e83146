/** `dcm subcloud …`: the fleet inventory. */
import fs from 'node:fs';
import { buffer } from 'node:stream/consumers';
import { OperationError } from '../domain/errors.js';
import { checkName, type LabelSelector, type SubcloudInput } from '../domain/inventory.js';
import { importBatches, type ImportRow } from '../domain/importfile.js';
import { findGroup } from '../store/groups.js';
import type { Db } from '../store/open.js';
import {
  deleteSubcloud,
  existingNames,
  findSubcloudByRef,
  hasStep,
  idOfName,
  maxSubcloudId,
  insertSubclouds,
  iterateSubclouds,
  listSubclouds,
  updateSubcloud,
  type SubcloudFields,
  type SubcloudRow,
} from '../store/subclouds.js';
import { immediate, readRows, withReadDb, withWriteDb, type Ctx } from './context.js';
import type { CommandResult, Outcome } from './results.js';

async function groupId(db: Db, ref: string): Promise<number> {
  const g = await findGroup(db, ref);
  if (!g) throw new OperationError(`Subcloud group ${ref} does not exist`);
  return g.id;
}

/** Input fields to stored fields: the group reference becomes its id. */
async function toStored(db: Db, input: SubcloudInput): Promise<SubcloudFields> {
  const { group, ...rest } = input;
  return group === undefined ? rest : { ...rest, group_id: await groupId(db, group) };
}

async function addRows(db: Db, rows: { name: string; fields: SubcloudInput; line?: number }[]): Promise<void> {
  const taken = await existingNames(db, rows.map((r) => r.name));
  if (taken.length) {
    const row = rows.find((r) => r.name === taken[0])!;
    throw new OperationError(`${row.line ? `line ${row.line}: ` : ''}Subcloud ${taken[0]} already exists`);
  }
  const stored: { name: string; fields: SubcloudFields }[] = [];
  for (const r of rows) {
      try {
      stored.push({ name: r.name, fields: await toStored(db, r.fields) });
      } catch (err) {
        if (r.line && err instanceof OperationError) throw new OperationError(`line ${r.line}: ${err.message}`);
        throw err;
      }
  }
  await insertSubclouds(db, stored);
}

export async function subcloudAdd(ctx: Ctx, names: string[], input: SubcloudInput): Promise<CommandResult> {
  names.forEach((n) => checkName('subcloud', n));
  const seen = new Set<string>();
  const dup = names.find((n) => seen.size === seen.add(n).size);
  if (dup) throw new OperationError(`Subcloud ${dup} is given twice`);
  return await withWriteDb(ctx, async (db) =>
    await immediate(db, async (tx) => {
      await addRows(tx, names.map((name) => ({ name, fields: input })));
      const added = new Set(names);
      return { kind: 'subclouds', rows: (await listSubclouds(tx)).filter((r) => added.has(r.name)), detail: false };
    }),
  );
}

export async function subcloudImport(ctx: Ctx, file: string): Promise<CommandResult> {
  let buf: Buffer;
  try {
    // The bytes, not a string: a batch is decoded when its turn comes (importBatches), and a
    // Buffer lives outside the JS heap.
    // Standard input as a stream: a pipe from a slow producer may be non-blocking, and a
    // synchronous read of it fails with EAGAIN once it has read what was there so far.
    buf = file === '-' ? await buffer(process.stdin) : fs.readFileSync(file);
  } catch (err) {
    throw new OperationError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  // The first batch is checked before the file is opened: a file that is not an import at all
  // (no name column, broken JSON on line 1) creates nothing, not even a temporary file.
  const batches = importBatches(buf);
  const head = batches.next();
  return await withWriteDb(ctx, async (db) =>
    await immediate(db, async (tx) => {
      // All rows or none: every batch is inserted inside this one transaction, so a bad row on
      // any line rolls back the batches before it (and a new file is never published).
      let count = 0;
      // The line of each row inserted, by its id: new rows take ids from max(id) + 1 on, one by
      // one (the table has no AUTOINCREMENT, and this transaction is the only writer), so a name
      // that meets an id above `before` is a name given twice in the file.
      const lines: number[] = [];
      const before = await maxSubcloudId(tx);
      const insert = async (rows: ImportRow[]) => {
        const stored: { name: string; fields: SubcloudFields }[] = [];
        for (const r of rows) {
          try {
            stored.push({ name: r.name, fields: await toStored(tx, r.fields) });
          } catch (err) {
            if (err instanceof OperationError) throw new OperationError(`line ${r.line}: ${err.message}`);
            throw err;
          }
        }
        for (const r of rows) lines.push(r.line);
        await insertSubclouds(tx, stored, async (i) => {
          const r = rows[i];
          const other = await idOfName(tx, r.name);
          if (other !== undefined && other > before) {
            throw new OperationError(`line ${r.line}: duplicate name '${r.name}' (first on line ${lines[other - before - 1]})`);
          }
          throw new OperationError(`line ${r.line}: Subcloud ${r.name} already exists`);
        });
        count += rows.length;
      };
      if (!head.done) await insert(head.value);
      for (const rows of batches) await insert(rows);
      return { kind: 'imported', count };
    }),
  );
}

/** dcmanager hides subclouds of these deploy statuses unless `--all` is given. */
export const SECONDARY = ['secondary', 'secondary-failed'];

export async function subcloudList_(
  ctx: Ctx,
  opts: { group?: string; all?: boolean; detail?: boolean; labels?: LabelSelector } = {},
): Promise<CommandResult> {
  // Read as printed: the group is looked up when the listing starts, before anything is written.
  const rows = readRows(ctx, async function* (db) {
    yield* iterateSubclouds(db, opts.group === undefined ? undefined : await groupId(db, opts.group), Boolean(opts.all), SECONDARY, opts.labels);
  });
  return { kind: 'subclouds', rows, detail: Boolean(opts.detail) };
}

/** A subcloud by name, or by id when all digits (see findSubcloudByRef). */
export async function mustFind(db: Db, name: string): Promise<SubcloudRow> {
  const sc = await findSubcloudByRef(db, name);
  if (!sc) throw new OperationError(`Subcloud ${name} does not exist`);
  return sc;
}

/** Each of `names` (mustFind), in order. */
export async function mustFindAll(db: Db, names: readonly string[]): Promise<SubcloudRow[]> {
  const rows: SubcloudRow[] = [];
  for (const n of names) rows.push(await mustFind(db, n));
  return rows;
}

export async function subcloudShow_(ctx: Ctx, name: string, detail = false): Promise<CommandResult> {
  const row = await withReadDb(ctx, null, (db) => mustFind(db, name));
  if (!row) throw new OperationError(`Subcloud ${name} does not exist`);
  return { kind: 'subcloud', row, detail };
}

export async function subcloudUpdate(ctx: Ctx, names: string[], input: SubcloudInput): Promise<Outcome> {
  if (Object.keys(input).length === 0) throw new OperationError('Nothing to update');
  const warnings: string[] = [];
  // Taken out while a strategy has a step for it: what becomes of the step (taken-out.ts; loaded
  // before the transaction, and only then: a list never loads it).
  const out = [input.management === 'unmanaged' ? 'unmanaged' : null, input.availability === 'offline' ? 'offline' : null].filter(Boolean).join(' and ');
  const taken = out ? await import('./taken-out.js') : null;
  const result = await withWriteDb(ctx, async (db) =>
    (await immediate(db, async (tx): Promise<CommandResult> => {
      const rows = await mustFindAll(tx, names);
      const fields = await toStored(tx, input);
      for (const r of rows) await updateSubcloud(tx, r.id, fields);
      const said = taken ? await taken.takenOutWarning(tx, rows, out) : null;
      if (said) warnings.push(said);
      // One name: the subcloud as `show` prints it, as dcmanager's `subcloud update` does.
      if (names.length === 1) return { kind: 'subcloud', row: await mustFind(tx, String(rows[0].id)), detail: false };
      const changed = new Set(rows.map((r) => r.id));
      return { kind: 'subclouds', rows: (await listSubclouds(tx)).filter((r) => changed.has(r.id)), detail: false };
    })),
  );
  return { result, warnings };
}

export async function subcloudDelete(ctx: Ctx, names: string[]): Promise<CommandResult> {
  return await withWriteDb(ctx, async (db) =>
    (await immediate(db, async (tx) => {
      const rows = await mustFindAll(tx, names);
      for (const r of rows) {
        if (await hasStep(tx, r.id)) {
          throw new OperationError(`Subcloud ${r.name} has a step in the current strategy; delete the strategy first`);
        }
      }
      for (const r of rows) await deleteSubcloud(tx, r.id);
      return { kind: 'nothing' };
    })),
  );
}
