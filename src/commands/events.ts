/** `dcm strategy events`: the strategy's event record, oldest first. */
import { EVENT_COLUMNS } from '../domain/events.js';
import type { StrategyType } from '../domain/types.js';
import { listEvents } from '../store/events.js';
import { getStrategy } from '../store/strategy.js';
import { list, type ListResult } from './plain-results.js';
import { withReadDb, type Ctx } from './context.js';
import { strategyNotFound } from './strategy.js';

/**
 * No file or no strategy: an empty list, as the step lists print one. A strategy of another type
 * than the one asked for (`patch-strategy events` over a kubernetes one) is not found.
 */
export async function strategyEvents(ctx: Ctx, type?: StrategyType): Promise<ListResult> {
  const rows = withReadDb(ctx, [], (db) => {
    const s = getStrategy(db);
    if (!s) return [];
    if (type && s.type !== type) strategyNotFound(type);
    return listEvents(db).map((e) => [e.at, e.event, e.user, e.host, e.pid, e.details, e.reason]);
  });
  return list(EVENT_COLUMNS, rows);
}
