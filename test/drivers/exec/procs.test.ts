/** Process groups by /proc: alive while a member lives, gone when all are dead or zombies. */
import { describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { groupAlive, groupMembers, procStartTime, sameProcessAlive, terminateGroup, ticksNow } from '../../../src/drivers/exec/procs.js';
import { TagScans } from '../../../src/drivers/exec/tag-scans.js';
import { procPasses, readStat } from '../../../src/platform/proc.js';

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
  test('a stat is read past a command name with spaces and parentheses', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-stat-'));
    const odd = path.join(dir, 'a) b (c');
    fs.copyFileSync('/bin/sleep', odd);
    fs.chmodSync(odd, 0o755);
    const child = spawn(odd, ['1000'], { detached: true, stdio: 'ignore' });
    try {
      for (let i = 0; i < 100 && !/\(a\) b \(c\)/.test(fs.readFileSync(`/proc/${child.pid}/stat`, 'latin1')); i++) await new Promise((r) => setTimeout(r, 10));
      const s = readStat(child.pid!);
      const fields = fs.readFileSync(`/proc/${child.pid}/stat`, 'latin1').split(') ').pop()!.split(' ');
      expect(s).toEqual({ state: fields[0], pgrp: child.pid, starttime: Number(fields[19]) });
      expect(s!.starttime).toBeGreaterThan(0);
    } finally {
      child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('ticksNow is never later than /proc/uptime says, and a second early at most by a little', () => {
    for (let i = 0; i < 5; i++) {
      const before = Math.floor(Number(fs.readFileSync('/proc/uptime', 'latin1').split(' ')[0]) * 100);
      const t = ticksNow();
      const after = Math.floor(Number(fs.readFileSync('/proc/uptime', 'latin1').split(' ')[0]) * 100);
      expect(t).toBeLessThanOrEqual(after - 100 + 1);
      expect(t).toBeGreaterThanOrEqual(before - 100 - 5);
    }
  });

  test('the groups of other runs going are passed over, never a run asked about nor a group whose leader is not the run\'s', async () => {
    // Run a: its leader, a sleep in its group, and one that left it (setsid). Run s: another run going.
    const since = ticksNow();
    const env = (id: string) => ({ ...process.env, DCM_RUN_ID: id });
    const a = spawn('/bin/sh', ['-c', 'setsid sleep 1000 & sleep 1000'], { detached: true, stdio: 'ignore', env: env('test/a/x/2') });
    const s = spawn('/bin/sh', ['-c', 'sleep 1000 & sleep 1000'], { detached: true, stdio: 'ignore', env: env('test/s/x/2') });
    try {
      const aStart = procStartTime(a.pid!)!;
      const sStart = procStartTime(s.pid!)!;
      // Both runs are going; a is asked about all the same, by its id and its group.
      const going = [
        { runId: 'test/a/x/2', pgid: a.pid!, leaderStart: aStart },
        { runId: 'test/s/x/2', pgid: s.pid!, leaderStart: sStart },
      ];
      const scans = new TagScans(() => going);
      let fa = await scans.find('test/a/x/2', since, a.pid!);
      for (let i = 0; i < 200 && fa.tagged.length < 3; i++) {
        await new Promise((r) => setTimeout(r, 10));
        fa = await scans.find('test/a/x/2', since, a.pid!);
      }
      expect(fa.tagged.length).toBe(3);
      // Asked by its id alone (no group), a run going is read all the same.
      expect((await scans.find('test/a/x/2', since)).tagged.length).toBe(3);
      // s's group, its leader the run's, is passed over when another run is asked about (once
      // its shell has started both its sleeps: on a busy machine that comes after a's).
      let fs2 = await scans.find('test/s/x/2', since, null);
      for (let i = 0; i < 200 && fs2.tagged.length < 3; i++) {
        await new Promise((r) => setTimeout(r, 10));
        fs2 = await scans.find('test/s/x/2', since, null);
      }
      expect(fs2.tagged.length).toBe(3);
      const overS = new TagScans(() => [{ runId: 'test/other', pgid: s.pid!, leaderStart: sStart }]);
      expect((await overS.find('test/s/x/2', since)).tagged).toEqual([]);
      // A leader whose start is not the run's (the number used again): the group is read.
      const reused = new TagScans(() => [{ runId: 'test/other', pgid: s.pid!, leaderStart: sStart + 1 }]);
      expect((await reused.find('test/s/x/2', since)).tagged.length).toBe(3);
    } finally {
      const escaped = (await new TagScans().find('test/a/x/2', since)).tagged;
      await terminateGroup(a.pid!, 100);
      await terminateGroup(s.pid!, 100);
      for (const p of escaped) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  });
});
