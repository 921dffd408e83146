/**
 * Strategies kept after delete (store/archive.ts): `strategy list`, and the `--strategy ID` of
 * `strategy report` and `strategy events`, which read a kept record as they read the current one.
 */
import { OperationError, UsageError } from '../domain/errors.js';
import { parseStrategyId, strategyIdOf } from '../domain/logs.js';
import type { StrategyType } from '../domain/types.js';
import { getArchived, archivedEvents, lastArchived, listArchived, stepCounts, type ArchiveSummary, type ArchivedStrategy } from '../store/archive.js';
import type { EventRow } from '../store/events.js';
import type { Db } from '../store/open.js';
import { getStrategy, type Strategy } from '../store/strategy.js';
import { list, type ListResult } from './plain-results.js';
import { withReadDb, type Ctx } from './context.js';
import { strategyNotFound } from './strategy.js';

export const STRATEGY_LIST_COLUMNS = ['id', 'strategy type', 'state', 'steps', 'complete', 'failed', 'created_at', 'updated_at', 'deleted_at', 'deleted_by'];

/**
 * `--strategy ID`: the id `strategy list` shows (the digits of the strategy's created_at, as its
 * run logs' folder is named), or that created_at; anything else is a usage error, before the file
 * is read.
 */
export function strategyIdOption(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const id = parseStrategyId(text);
  if (id === null) throw new UsageError(`invalid strategy id '${text}': give the id strategy list shows (20 digits), or its created_at`);
  return id;
}

export function unknownStrategy(id: string): never {
  throw new OperationError(`Strategy ${id} not found (strategy list shows the strategies kept)`);
}

/** The current strategy when `id` is its own, else undefined. */
async function currentIf(db: Db, id: string): Promise<Strategy | undefined> {
  const s = await getStrategy(db);
  return s && strategyIdOf(s.created_at) === id ? s : undefined;
}

/** A kept strategy by id, of the type asked for (a type alias); an unknown id is an error. */
export async function archivedOrCurrent(db: Db, id: string, type: StrategyType | undefined): Promise<{ current: Strategy } | { kept: ArchivedStrategy }> {
  const current = await currentIf(db, id);
  if (current) {
    if (type && current.type !== type) strategyNotFound(type);
    return { current };
  }
  const kept = await getArchived(db, id) ?? unknownStrategy(id);
  if (type && kept.type !== type) strategyNotFound(type);
  return { kept };
}

/** A kept strategy's events; null when `id` is the current strategy's (read as usual). */
export async function keptEvents(db: Db, id: string, type: StrategyType | undefined): Promise<EventRow[] | null> {
  const current = await currentIf(db, id);
  if (current) {
    if (type && current.type !== type) strategyNotFound(type);
    return null;
  }
  const kept = await archivedEvents(db, id) ?? unknownStrategy(id);
  if (type && kept.type !== type) strategyNotFound(type);
  return kept.events;
}

/** A live strategy's line of the list: counted from its steps, not deleted. */
async function currentLine(db: Db, s: Strategy): Promise<ArchiveSummary> {
  const counts = await stepCounts(db);
  return { id: strategyIdOf(s.created_at), type: s.type, state: s.state, ...counts, created_at: s.created_at, updated_at: s.updated_at, deleted_at: null, deleted_by: null };
}

/**
 * `strategy list`: the strategies the file holds, the kept ones oldest first and the current one
 * (not deleted: deleted_at None) last; a type alias lists its type's only. No file: the empty list.
 */
export async function strategyList(ctx: Ctx, type?: StrategyType): Promise<ListResult> {
  const rows = await withReadDb(ctx, [] as ArchiveSummary[], async (db) =>
    await db
      .transaction(async (tx) => {
        const s = await getStrategy(tx);
        return [...(await listArchived(tx)), ...(s ? [await currentLine(tx, s)] : [])];
      })
      .deferred(),
  );
  return list(
    STRATEGY_LIST_COLUMNS,
    rows
      .filter((r) => !type || r.type === type)
      .map((r) => [r.id, r.type, r.state, Number(r.steps), Number(r.complete), Number(r.failed), r.created_at, r.updated_at, r.deleted_at, r.deleted_by]),
  );
}

/**
 * `strategy status` with no strategy: after a delete, what is kept of the last one, and how to read
 * it (issue 49: `Strategy not found` alone left an operator at 3 a.m. wondering where it went).
 */
export async function notFoundSayingKept(ctx: Ctx, type?: StrategyType): Promise<never> {
  const kept = await withReadDb(ctx, undefined, (db) => lastArchived(db));
  if (!kept || (type && kept.type !== type)) strategyNotFound(type);
  throw new OperationError(
    `${type ? `Strategy of type '${type}' not found` : 'Strategy not found'}: the last one (${kept.type}, ${kept.state}) was deleted by ${kept.deleted_by} ` +
      `at ${kept.deleted_at} and is kept as strategy ${kept.id}: \`dcm strategy report --strategy ${kept.id} --html FILE\`, \`dcm strategy events --strategy ${kept.id}\``,
  );
}
