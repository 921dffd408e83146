/**
 * Fenced orchestrators (SPEC §2.1): a stopped apply is never taken over on its own host, and one
 * taken over from another host writes nothing once it continues. This is dcm's reason to exist:
 * two orchestrators on one file are two workers on one site.
 */
import { describe, expect, test } from '@jest/globals';
import { statesOf } from '../../src/domain/types.js';
import { dcm, sleep, waitFor } from '../helpers/cli.js';
import { withSql } from '../helpers/fleet.js';
import { freezeBetweenWrites } from '../helpers/seams.js';
import { createFleet, history, names, okRunProblems, spawnDcm, steps, strategyState, tempPerTest } from '../helpers/history.js';

const PATCH = statesOf('patch');


const temp = tempPerTest();

/** Everything the orchestrators write about the work: steps, history, strategy. */
async function snapshot(db: string): Promise<string> {
  return await withSql(db, async (d) =>
    JSON.stringify([
      await d.prepare('SELECT * FROM strategy_step ORDER BY id').all(),
      await d.prepare('SELECT * FROM step_history ORDER BY id').all(),
      await d.prepare('SELECT state, updated_at FROM strategy').all(),
    ]),
  );
}

const lockRow = async (db: string) =>
  await withSql(db, async (d) => await d.prepare('SELECT pid, host, heartbeat_ms, token FROM apply_lock').get() as
    | { pid: number; host: string; heartbeat_ms: number; token: string }
    | undefined);

describe('apply: two orchestrators', () => {
  // Claim, README "Your data", two orchestrators: on the same host a live holder is never taken over, however long it has
  // been silent (the second exits 4, `pid P is alive but has not written for N s`); from another host it is
  // taken over once its heartbeat is 30 s old, and the old one, woken, writes nothing more and exits 4 with
  // `error: lost the apply lock to pid P on host H`.
  test('a stopped holder: refused on its host however silent; taken over from another host, then it exits 4 having written nothing', async () => {
    const t = temp();
    const clouds = names(30);
    createFleet(t.db, clouds, ['--max-parallel-subclouds', '10', '--sim-latency', '100ms..300ms', '--sim-seed', '7']);
    const a = spawnDcm(['--db', t.db, 'strategy', 'apply'], { DCM_HOST: 'node-a' });
    await waitFor(() => history(t.db).filter((h) => h.outcome === 'ok').length >= 15, 20_000, 10);
    await freezeBetweenWrites(a.child, [t.db, `${t.db}.sites`]);
    try {
      // Same host, fresh heartbeat: the holder is alive.
      const early = dcm(['--db', t.db, 'strategy', 'apply'], { env: { DCM_HOST: 'node-a' } });
      expect(early.code).toBe(4);
      expect(early.stderr).toMatch(new RegExp(`^error: another orchestrator holds .*: pid ${a.child.pid} on host node-a since [^;]*\\n$`));

      // Silent for over 30 s: still alive on its own host (it is only stopped), and said so.
      await waitFor(async () => Date.now() - (await lockRow(t.db))!.heartbeat_ms > 31_000, 60_000, 200);
      const silent = dcm(['--db', t.db, 'strategy', 'apply'], { env: { DCM_HOST: 'node-a' } });
      expect(silent.code).toBe(4);
      expect(silent.stderr).toMatch(new RegExp(`pid ${a.child.pid} is alive but has not written for 3\\d s; if it is hung, stop it\\n$`));

      // From another host the pid means nothing: a stale heartbeat is taken over.
      const b = dcm(['--db', t.db, 'strategy', 'apply'], { env: { DCM_HOST: 'node-b' } });
      // Alive and stopped, not gone: what is known from here is how old its heartbeat was.
      expect(b.stderr).toMatch(new RegExp(`took over the apply lock of pid ${a.child.pid} on node-a \\(its heartbeat was 3\\d s old\\)\\n`));
      expect(b.stderr).not.toContain('no longer running');
      expect({ code: b.code, stderr: b.code === 0 ? '' : b.stderr }).toEqual({ code: 0, stderr: '' });
      expect(strategyState(t.db)).toBe('complete');
    } finally {
      const before = await snapshot(t.db);
      a.child.kill('SIGCONT');
      const r = await a.done;
      // The displaced orchestrator stops at its first write and says to whom it lost the lock.
      expect(r.code).toBe(4);
      expect(r.stderr).toMatch(/^error: lost the apply lock to pid \d+ on host node-b$/m);
      expect(r.stdout).toBe('');
      await sleep(100);
      expect(await snapshot(t.db)).toBe(before);
    }
    const runs = history(t.db);
    expect(okRunProblems(runs, clouds, PATCH)).toEqual([]);
    expect(steps(t.db).every((s) => s.state === 'complete')).toBe(true);
    expect(await withSql(t.db, (d) => d.pragma('integrity_check', { simple: true }))).toBe('ok');
  }, 90_000);
});
