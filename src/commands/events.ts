/** `dcm strategy events [--strategy ID]`: the strategy's event record, oldest first. */
import { EVENT_COLUMNS } from '../domain/events.js';
import type { StrategyType } from '../domain/types.js';
import { listEvents } from '../store/events.js';
import { getStrategy } from '../store/strategy.js';
import { list, type ListResult } from './plain-results.js';
import { withReadDb, type Ctx } from './context.js';
import { strategyNotFound } from './strategy.js';
import { keptEvents, strategyIdOption, unknownStrategy } from './archive.js';

/**
 * No file or no strategy: an empty list, as the step lists print one. A strategy of another type
 * than the one asked for (`patch-strategy events` over a kubernetes one) is not found. `--strategy
 * ID` reads a deleted strategy's kept record (or the current one's, when ID is its own).
 */
export async function strategyEvents(ctx: Ctx, type?: StrategyType, strategyId?: string): Promise<ListResult> {
  const id = strategyIdOption(strategyId);
  const rows = await withReadDb(ctx, null, async (db) => {
    const kept = id === undefined ? null : await keptEvents(db, id, type);
    if (kept) return kept.map((e) => [e.at, e.event, e.user, e.host, e.pid, e.details, e.reason ?? null]);
    const s = await getStrategy(db);
    if (!s) return [];
    if (type && s.type !== type) strategyNotFound(type);
    return (await listEvents(db)).map((e) => [e.at, e.event, e.user, e.host, e.pid, e.details, e.reason]);
  });
  // No file holds no kept strategy either.
  if (rows === null && id !== undefined) unknownStrategy(id);
  return list(EVENT_COLUMNS, rows ?? []);
}
