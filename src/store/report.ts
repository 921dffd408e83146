/** The history rows a report draws, with the step each belongs to. */
import type { Db } from './open.js';
import { sql } from './statements.js';
import type { HistoryRow } from './steps.js';

/** A history row by the id of its step rather than its subcloud's name. */
export type RunRow = Omit<HistoryRow, 'cloud'> & { step_id: number };

/** Every state-operation run, in the order they started. */
export async function listRuns(db: Db): Promise<RunRow[]> {
  return (await sql(db, 'SELECT step_id, state, attempt, started_at, finished_at, outcome, details FROM step_history ORDER BY id').all()) as RunRow[];
}
