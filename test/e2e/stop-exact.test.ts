/**
 * A pause or an abort holds from the moment its command returns, not from the orchestrator's next
 * poll: a commit that would open a new subcloud reads the strategy's state in its own transaction
 * (orchestrator.ts `commitPending`). With the sim at 3..6 ms a state and a window of 10, a poll's
 * quarter second used to let dozens more subclouds start after `pause` or `abort` had returned.
 * Judged by the file alone: the test makes the stop's write itself (the state change `dcm strategy
 * pause` or `abort` commits) and reads the subclouds started in the same transaction, so the set
 * is exactly the one at the stop's commit; those are all that ever start.
 */
import { describe, expect, test } from '@jest/globals';
import { waitFor } from '../helpers/cli.js';
import { withSql } from '../helpers/fleet.js';
import type { Db } from '../../src/platform/db.js';
import { names, spawnDcm, tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();
/** Enough that the rollout (seconds) outlasts the commands that stop it. */
const N = 2000;

/** The subclouds whose step has left `initial` (started, or ended after starting). */
const started = async (db: string, open?: Db): Promise<string[]> => {
  const read = async (d: Db) =>
    await d
      .prepare("SELECT sc.name FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE st.state NOT IN ('initial', 'aborted') ORDER BY sc.name")
      .pluck()
      .all() as string[];
  return open ? read(open) : withSql(db, read);
};
const inFlight = async (db: string): Promise<number> =>
  await withSql(db, async (d) => await d.prepare("SELECT count(*) FROM strategy_step WHERE state NOT IN ('initial', 'complete', 'failed', 'aborted')").pluck().get() as number);
/** Commit the strategy's state `to` as the operator's command does, and return who had started by then. */
const stopAt = async (db: string, to: string): Promise<string[]> =>
  await withSql(db, async (d) =>
    await d
      .transaction(async (tx) => {
        if ((await tx.prepare("UPDATE strategy SET state = $1 WHERE id = 1 AND state = 'applying'").run(to)).changes !== 1) throw new Error(`the strategy is not applying: no ${to}`);
        return await started(db, tx);
      })
      .immediate(),
  );
/** The subclouds that ever ran a state. */
const ran = async (db: string): Promise<string[]> =>
  await withSql(db, async (d) =>
    await d
      .prepare('SELECT DISTINCT sc.name FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id ORDER BY sc.name')
      .pluck()
      .all() as string[],
  );

describe('a stop holds from the moment it is committed', () => {
  test('pause: no subcloud starts after the pause committed; abort: none after the abort committed, and every other is aborted', async () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(N)]);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '10', '--sim-latency', '3ms..6ms']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(async () => (await started(t.db)).length >= 40 || apply.child.exitCode !== null, 60_000, 5);

    const atPause = await stopAt(t.db, 'paused');
    await waitFor(() => apply.stderr().includes('dcm: paused:') || apply.child.exitCode !== null, 30_000, 5);
    // Paused, the subclouds in flight run to their end; none is opened meanwhile.
    await waitFor(async () => await inFlight(t.db) === 0 || apply.child.exitCode !== null, 30_000, 5);
    expect(apply.child.exitCode).toBeNull();
    expect(atPause.length).toBeLessThan(N);
    expect(await started(t.db)).toEqual(atPause);

    dcmQuickOk(['--db', t.db, 'strategy', 'resume']);
    await waitFor(async () => (await started(t.db)).length >= atPause.length + 40 || apply.child.exitCode !== null, 60_000, 5);
    const atAbort = await stopAt(t.db, 'abort requested');
    expect((await apply.done).code).toBe(3);
    expect(atAbort.length).toBeLessThan(N);
    // Every subcloud not started when the abort returned is aborted, and never ran.
    expect(await started(t.db)).toEqual(atAbort);
    expect(await ran(t.db)).toEqual(atAbort);
  }, 180_000);
});
