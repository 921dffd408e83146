/**
 * Every wait on a busy store is bounded or answered by a second Ctrl-C (README "Your data"):
 * another process holds the file's write lock (BEGIN IMMEDIATE) while apply drains after a first
 * Ctrl-C; the answers of the runs cannot be committed. The second Ctrl-C must end the apply (130)
 * while the lock is still held: what was answered and not committed is the next apply's to run
 * again (as its next attempt), and nothing else is lost.
 *
 * After the second signal the orchestrator's last commits and the end's own write wait for the
 * store FINAL_FLUSH_MS at most (commit-loop.ts, committer.ts).
 */
import { afterEach, expect, test } from '@jest/globals';
import { waitFor } from '../helpers/cli.js';
import { killLeftovers, spawnDcm, steps, tempPerTest } from '../helpers/history.js';
import { holdWriteLock, sql } from '../helpers/seams.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();
let holder: ReturnType<typeof holdWriteLock> | undefined;
afterEach(() => {
  holder?.child.kill('SIGKILL');
  holder = undefined;
  killLeftovers();
});

const running = async (db: string) => await sql(db, async (d) => await d.prepare("SELECT count(*) FROM step_history WHERE outcome = 'running'").pluck().get() as number);

test('a second Ctrl-C ends an apply whose store stays busy, and the next apply finishes the strategy', async () => {
  const t = temp();
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '2s..2s']);
  const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
  await waitFor(async () => await running(t.db) === 2, 60_000, 20);
  // Held far longer than the test: only the apply's own bound (or the second signal) ends its wait.
  holder = holdWriteLock(t.db, 300_000);
  await holder.held;
  apply.child.kill('SIGINT');
  await waitFor(() => apply.stderr().includes('the database is locked by another process'), 60_000, 20);
  apply.child.kill('SIGINT');
  await waitFor(() => apply.child.exitCode !== null || apply.child.signalCode !== null, 30_000, 50);
  const r = await apply.done;
  expect(r.code).toBe(130);
  // Still held: the apply did not wait for it.
  expect(holder.child.exitCode).toBeNull();
  expect(r.stderr).toMatch(/^error: .*(busy|locked).*$/m);

  holder.child.kill('SIGKILL');
  const again = await spawnDcm(['--db', t.db, 'strategy', 'apply']).done;
  expect(again.code).toBe(0);
  expect(steps(t.db).map((s) => s.state)).toEqual(['complete', 'complete']);
});
