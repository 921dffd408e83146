/**
 * The order a stage's open steps are read in (src/store/cursor.ts), on a file and in the
 * PostgreSQL pass on a server: the runs the last process left going first (adopted, on their
 * sites already), then the rest of those caught mid-state, then those started once that hold no
 * slot (deferred, retried), then the steps never started; a page at a time, each phase in id order.
 */
import { afterEach, beforeAll, beforeEach, expect, test } from '@jest/globals';
import { loadPgBackend, type Db } from '../../src/store/open.js';
import { StageCursor } from '../../src/store/cursor.js';
import { strategyOf } from '../helpers/store.js';
import { pgTestUrl } from '../helpers/pg-databases.js';

let db: Db;
let cleanup: () => void;

beforeAll(async () => {
  if (pgTestUrl()) await loadPgBackend();
});
beforeEach(() => {
  ({ db, cleanup } = strategyOf(['s1', 's2', 's3', 's4', 's5', 's6', 's7']));
});
afterEach(() => cleanup());

/** Step `id` in `state`, with a last run of `outcome` (none when null). */
function put(id: number, state: string, outcome: string | null, retryAt: string | null = null): void {
  db.prepare('UPDATE strategy_step SET state = ? WHERE id = ?').run(state, id);
  if (outcome === null) return;
  db.prepare(
    `INSERT INTO step_history (step_id, state, attempt, started_at, finished_at, outcome, retry_at)
     VALUES (?, ?, 1, '2026-01-01 00:00:00.000000', ?, ?, ?)`,
  ).run(id, state === 'deferred' ? 'pre check' : state, outcome === 'running' ? null : '2026-01-01 00:00:01.000000', outcome, retryAt);
}

test('runs left going first, then the rest caught mid-state, then deferred and retried, then the new; a page at a time', () => {
  // s1 deferred (its site did not answer), s2 caught mid-state with its run gone (interrupted),
  // s3 put back by a retry (its last run failed), s4 with a run still going, s5 caught mid-state
  // with a retry's backoff due, s6 and s7 never started.
  put(1, 'deferred', 'ok', '2026-01-01 00:01:00.000000');
  put(2, 'installing license', 'interrupted');
  put(3, 'installing license', 'failed');
  put(4, 'installing license', 'running');
  put(5, 'installing license', 'failed', '2026-01-01 00:01:00.000000');
  const cursor = new StageCursor(db, 1);
  const read = (n: number) => cursor.next(n).map((s) => [s.cloud, s.retried]);
  expect(read(2)).toEqual([
    ['s4', false],
    ['s2', false],
  ]);
  expect(read(3)).toEqual([
    ['s5', false],
    ['s1', false],
    ['s3', true],
  ]);
  expect(read(5)).toEqual([
    ['s6', false],
    ['s7', false],
  ]);
  expect(read(5)).toEqual([]);
  cursor.rewind();
  expect(cursor.next(10).map((s) => s.cloud)).toEqual(['s4', 's2', 's5', 's1', 's3', 's6', 's7']);
});
