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
beforeEach(async () => {
  ({ db, cleanup } = await strategyOf(['s1', 's2', 's3', 's4', 's5', 's6', 's7']));
});
afterEach(() => cleanup());

/** Step `id` in `state`, with a last run of `outcome` (none when null). */
async function put(id: number, state: string, outcome: string | null, retryAt: string | null = null): Promise<void> {
  await db.prepare('UPDATE strategy_step SET state = $1 WHERE id = $2').run(state, id);
  if (outcome === null) return;
  await db.prepare(
    `INSERT INTO step_history (step_id, state, attempt, started_at, finished_at, outcome, retry_at)
     VALUES ($1, $2, 1, '2026-01-01 00:00:00.000000', $3, $4, $5)`,
  ).run(id, state === 'deferred' ? 'pre check' : state, outcome === 'running' ? null : '2026-01-01 00:00:01.000000', outcome, retryAt);
}

test('runs left going first, then the rest caught mid-state, then deferred and retried, then the new; a page at a time', async () => {
  // s1 deferred (its site did not answer), s2 caught mid-state with its run gone (interrupted),
  // s3 put back by a retry (its last run failed), s4 with a run still going, s5 caught mid-state
  // with a retry's backoff due, s6 and s7 never started.
  await put(1, 'deferred', 'ok', '2026-01-01 00:01:00.000000');
  await put(2, 'installing license', 'interrupted');
  await put(3, 'installing license', 'failed');
  await put(4, 'installing license', 'running');
  await put(5, 'installing license', 'failed', '2026-01-01 00:01:00.000000');
  const cursor = new StageCursor(db, 1);
  const read = async (n: number) => (await cursor.next(n)).map((s) => [s.cloud, s.retried]);
  expect(await read(2)).toEqual([
    ['s4', false],
    ['s2', false],
  ]);
  expect(await read(3)).toEqual([
    ['s5', false],
    ['s1', false],
    ['s3', true],
  ]);
  expect(await read(5)).toEqual([
    ['s6', false],
    ['s7', false],
  ]);
  expect(await read(5)).toEqual([]);
  cursor.rewind();
  expect((await cursor.next(10)).map((s) => s.cloud)).toEqual(['s4', 's2', 's5', 's1', 's3', 's6', 's7']);
});
