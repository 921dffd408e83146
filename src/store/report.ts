/** The history rows a report draws, with the step each belongs to. */
import type { Db } from './open.js';
import { sql } from './statements.js';

export interface RunRow {
  step_id: number;
  state: string;
  attempt: number;
  started_at: string;
  finished_at: string | null;
  outcome: string;
  details: string;
}

/** Every state-operation run, in the order they started. */
export function listRuns(db: Db): RunRow[] {
  return sql(db, 'SELECT step_id, state, attempt, started_at, finished_at, outcome, details FROM step_history ORDER BY id').all() as RunRow[];
}
