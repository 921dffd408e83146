/**
 * Process groups as Linux shows them in /proc. A group is gone when none of its members is alive
 * (a zombie counts as gone, see platform/proc.ts): `kill(-pgid, 0)` alone would keep succeeding.
 */
import fs from 'node:fs';
import { countPass, isZombie, readStat } from '../../platform/proc.js';
import { sleep } from '../../platform/timers.js';

/** A process's start time in clock ticks since boot, or null when it is gone. */
export function procStartTime(pid: number): number | null {
  return readStat(pid)?.starttime ?? null;
}

/** Whether `pid` is still the process that was started at `start` (not a zombie, not a reused pid). */
export function sameProcessAlive(pid: number, start: number | null): boolean {
  const s = readStat(pid);
  if (!s || isZombie(s)) return false;
  return start === null || s.starttime === start;
}

/** The live (not zombie) members of a process group; with `first`, stop at the first one found. */
export function groupMembers(pgid: number, first = false): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return out;
  }
  countPass();
  for (const e of entries) {
    const c = e.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const s = readStat(e);
    if (s && s.pgrp === pgid && !isZombie(s)) {
      out.push(Number(e));
      if (first) break;
    }
  }
  return out;
}

/** Whether any member of the group is alive. Cheap when the group is gone for the kernel too. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    // ESRCH: no process at all in the group. EPERM: someone else's group now; not ours to wait for.
    return false;
  }
  return groupMembers(pgid, true).length > 0;
}

/** Send a signal to a whole group; a group already gone is fine. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // gone already
  }
}


/** Wait until the group is gone, polling; false if it is still there after `maxMs`. */
export async function waitGroupGone(pgid: number, maxMs: number): Promise<boolean> {
  const end = Date.now() + maxMs;
  let every = 5;
  while (groupAlive(pgid)) {
    if (Date.now() >= end) return false;
    await sleep(every);
    every = Math.min(every * 2, 100);
  }
  return true;
}

/**
 * SIGTERM to the group, SIGKILL after `graceMs` if any member is left, then wait (bounded) until
 * every member is gone. Returns whether the group is gone.
 */
export async function terminateGroup(pgid: number, graceMs: number): Promise<boolean> {
  if (!groupAlive(pgid)) return true;
  signalGroup(pgid, 'SIGTERM');
  if (await waitGroupGone(pgid, graceMs)) return true;
  signalGroup(pgid, 'SIGKILL');
  // After SIGKILL only a process stuck in the kernel (state D) can linger: bound the wait.
  return waitGroupGone(pgid, 10_000);
}

/** /proc/uptime as first read (ticks) and the monotonic clock then (ms); null until read, or without /proc. */
let uptimeAt: { ticks: number; mono: number } | null = null;

/**
 * Now, in the clock ticks of /proc start times (USER_HZ is 100 on Linux), a second early for safety.
 * Asked twice for every run: /proc/uptime is read once a process (five system calls a read), and
 * the monotonic clock's time since added to it. Start times count in boot time, which is the
 * monotonic clock plus any time suspended: what is added is never more than boot time moved, so
 * this is never later than a read of /proc/uptime would be (a run's processes, started after it,
 * are never left out); after a suspend it is earlier, which only widens the look.
 */
export function ticksNow(): number {
  if (!uptimeAt) {
    try {
      const up = Number(fs.readFileSync('/proc/uptime', 'latin1').split(' ')[0]);
      if (!Number.isFinite(up)) return 0;
      uptimeAt = { ticks: up * 100, mono: performance.now() };
    } catch {
      return 0;
    }
  }
  return Math.max(0, Math.floor(uptimeAt.ticks + (performance.now() - uptimeAt.mono) / 10) - 100);
}

/**
 * SIGTERM to each of `pids` (processes of a run that left its group), SIGKILL after `graceMs` to
 * those left, then wait (bounded) until they are gone.
 */
export async function terminatePids(pids: readonly number[], graceMs: number): Promise<void> {
  const alive = () => pids.filter((p) => sameProcessAlive(p, null));
  const send = (sig: NodeJS.Signals) => {
    for (const p of alive()) {
      try {
        process.kill(p, sig);
      } catch {
        // gone already
      }
    }
  };
  send('SIGTERM');
  const until = async (ms: number) => {
    const end = Date.now() + ms;
    let every = 5;
    while (alive().length && Date.now() < end) {
      await sleep(every);
      every = Math.min(every * 2, 100);
    }
  };
  await until(graceMs);
  if (!alive().length) return;
  send('SIGKILL');
  await until(10_000);
}

/**
 * SIGTERM to every live process carrying the run's tag (DCM_RUN_ID, in or out of its group),
 * SIGKILL after `graceMs` to those left, until none is left (bounded). Found afresh on every look,
 * so a process forked meanwhile is found too. Only tagged processes are signalled: a pid or group
 * id recorded earlier may belong to an unrelated process by now.
 */
export async function terminateTagged(find: () => number[], graceMs: number): Promise<void> {
  const send = (sig: NodeJS.Signals) => {
    for (const p of find()) {
      try {
        process.kill(p, sig);
      } catch {
        // gone already
      }
    }
  };
  const until = async (ms: number) => {
    const end = Date.now() + ms;
    let every = 5;
    while (find().length && Date.now() < end) {
      await sleep(every);
      every = Math.min(every * 2, 100);
    }
  };
  send('SIGTERM');
  await until(graceMs);
  for (let i = 0; i < 20 && find().length; i++) {
    send('SIGKILL');
    await until(500);
  }
}
