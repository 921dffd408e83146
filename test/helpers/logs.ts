/**
 * Where a strategy's run logs are, read as dcm reads them: the layout stored with the strategy
 * in the file (src/domain/logs.ts), so tests name a run's files the way the driver wrote them.
 */
import { openTestDb } from './db.js';
import { layoutOf, runBase, strategyIdOf, type LogLayout } from '../../src/domain/logs.js';

/** The current strategy's layout (its folder, version and id). */
export async function strategyLayout(db: string): Promise<LogLayout> {
  const d = await openTestDb(db, { readonly: true });
  try {
    const row = await d.prepare('SELECT created_at, extra_args FROM strategy').get() as { created_at: string; extra_args: string } | undefined;
    if (!row) throw new Error(`no strategy in ${db}`);
    return layoutOf({ created_at: row.created_at, extra: JSON.parse(row.extra_args) as Record<string, unknown> }, db);
  } finally {
    d.close();
  }
}

/** The current strategy's id. */
export async function strategyId(db: string): Promise<string> {
  return (await strategyLayout(db)).strategy;
}

/** A run's files without their ending (`.log`, `.status`, …), for the current strategy. */
export async function runFiles(db: string, cloud: string, attempt: number, state: string): Promise<string> {
  return runBase(await strategyLayout(db), cloud, attempt, state);
}

export { strategyIdOf };
