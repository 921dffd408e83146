/** Process groups by /proc: alive while a member lives, gone when all are dead or zombies. */
import { describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { groupAlive, groupMembers, procStartTime, sameProcessAlive, terminateGroup } from '../../../src/drivers/exec/procs.js';

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
});
