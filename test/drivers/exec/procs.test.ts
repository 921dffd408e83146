/** Process groups by /proc: alive while a member lives, gone when all are dead or zombies. */
import { describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { groupAlive, groupMembers, procStartTime, sameProcessAlive, terminateGroup, ticksNow } from '../../../src/drivers/exec/procs.js';
import { TagScans } from '../../../src/drivers/exec/tag-scans.js';
import { procPasses } from '../../../src/platform/proc.js';

describe('process groups', () => {
  // Claim, README "Running real updates", timeout: a run is over when its whole process group is gone.
  test('a group with a background child is alive until terminated, then every member is gone', async () => {
    // The leader ignores SIGTERM; its child does not: SIGKILL after the grace ends the leader.
    const child = spawn('/bin/sh', ['-c', "trap '' TERM; sleep 1000 & sleep 1000"], { detached: true, stdio: 'ignore' });
    const pid = child.pid!;
    const start = procStartTime(pid);
    expect(start).not.toBeNull();
    expect(sameProcessAlive(pid, start)).toBe(true);
    expect(sameProcessAlive(pid, start! + 1)).toBe(false);
    for (let i = 0; i < 100 && groupMembers(pid).length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    expect(groupMembers(pid).length).toBe(3);
    expect(groupAlive(pid)).toBe(true);
    expect(await terminateGroup(pid, 100)).toBe(true);
    expect(groupAlive(pid)).toBe(false);
    expect(groupMembers(pid)).toEqual([]);
  });

  test('an unknown group is not alive', () => {
    expect(groupAlive(2 ** 22 + 12345)).toBe(false);
    expect(procStartTime(2 ** 22 + 12345)).toBeNull();
  });

  test('one pass answers every run that ends in the same turn: its live group members and what carries its DCM_RUN_ID, in or out of the group', async () => {
    // Run a: a group of two (the leader and a child), one of which leaves the group (setsid).
    // Run b: a group that is gone. Both asked in the same turn: one pass over /proc.
    const since = ticksNow();
    const a = spawn('/bin/sh', ['-c', 'setsid sleep 1000 & sleep 1000'], { detached: true, stdio: 'ignore', env: { ...process.env, DCM_RUN_ID: 'test/a/x/1' } });
    const b = spawn('/bin/true', [], { detached: true, stdio: 'ignore', env: { ...process.env, DCM_RUN_ID: 'test/b/x/1' } });
    await new Promise((r) => b.once('exit', r));
    const scans = new TagScans();
    for (let i = 0; i < 200; i++) {
      const found = await scans.find('test/a/x/1', since, a.pid!);
      // Both sleeps started, and the setsid one out of the group.
      if (found.tagged.length === 3 && found.group.length === 2) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const before = procPasses();
    const [fa, fb] = await Promise.all([scans.find('test/a/x/1', since, a.pid!), scans.find('test/b/x/1', since, b.pid!)]);
    expect(procPasses() - before).toBe(1);
    expect(fa.group.length).toBe(2); // the leader and its sleep; the setsid one left the group
    expect(fa.tagged.length).toBe(3);
    expect(fa.tagged).toEqual(expect.arrayContaining(fa.group));
    expect(fb).toEqual({ group: [], tagged: [] });
    const escaped = fa.tagged.filter((p) => !fa.group.includes(p));
    expect(await terminateGroup(a.pid!, 100)).toBe(true);
    for (const p of escaped) process.kill(p, 'SIGKILL');
  });
});
