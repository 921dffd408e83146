/**
 * Processes as Linux shows them in /proc, read in one place: the apply lock (is its holder the
 * same process?), leftover temporary files (is their writer gone?) and the exec driver's process
 * groups all ask the same questions. A zombie counts as gone: where process 1 does not reap
 * orphans (a container without an init), a dead process stays a zombie and kill(pid, 0) still
 * succeeds.
 */
import fs from 'node:fs';

/**
 * The process a run started, as recorded in its history row before it can be lost: the exec
 * driver reports it, the store keeps it, the orchestrator asks whether it still runs. Here, below
 * all three, as it is the process's identity as Linux gives it.
 */
export interface RunProcess {
  pid: number;
  pgid: number;
  /** The process's start time (/proc/<pid>/stat field 22, clock ticks since boot): tells a reused pid apart. */
  procStart: number | null;
}

export interface ProcStat {
  /** Field 3: R, S, D, Z, X, … */
  state: string;
  /** Field 5: the process group. */
  pgrp: number;
  /** Field 22: start time in clock ticks since boot. */
  starttime: number;
}

let passes = 0;

/** Passes over every process in /proc this process has made (for the cost counters): each costs a stat read per process. */
export function procPasses(): number {
  return passes;
}

/** Counts a pass over /proc (readdir and a stat per process), wherever it is made. */
export function countPass(): void {
  passes++;
}

/** One buffer for every stat read: a scan reads hundreds, and each fresh buffer was garbage. */
const STAT_BUF = Buffer.allocUnsafe(4096);

/** Fields of /proc/<pid>/stat, or null when it cannot be read (gone, or no /proc here). */
export function readStat(pid: number | string): ProcStat | null {
  // open, read, close: readFileSync would add an fstat and a buffer per call.
  let text: string;
  let fd: number;
  try {
    fd = fs.openSync(`/proc/${pid}/stat`, 'r');
  } catch {
    return null;
  }
  try {
    text = STAT_BUF.toString('latin1', 0, fs.readSync(fd, STAT_BUF, 0, STAT_BUF.length, null));
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: rest[0], pgrp: Number(rest[2]), starttime: Number(rest[19]) };
}

export function isZombie(s: ProcStat): boolean {
  return s.state === 'Z' || s.state === 'X';
}

/** Whether `pid` runs: kill(pid, 0) reaches it and /proc does not show a zombie (without /proc, kill decides). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const s = readStat(pid);
  return !s || !isZombie(s);
}

let bootIdCache: string | null | undefined;

/** This boot's id: with a start time it names one process even across reboots. */
export function bootId(): string | null {
  if (bootIdCache === undefined) {
    try {
      bootIdCache = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootIdCache = null;
    }
  }
  return bootIdCache;
}

/**
 * Live processes whose environment holds `NAME=value` for one of `values`, by value: how a run's
 * processes are found after they left its process group (`setsid`, double forks), since the
 * environment is inherited whatever else changes. Only processes started at or after `since`
 * (clock ticks since boot) are read, so a scan costs a stat per process and an environ read for
 * the few that are new.
 */
export function processesWithEnv(name: string, values: ReadonlySet<string>, since = 0): Map<string, number[]> {
  return scanProcesses(name, values, since, new Set()).tagged;
}

/**
 * One pass over /proc for two questions at once: the live processes whose environment holds
 * `NAME=value` for one of `values` (started at or after `since`), and the live members of each
 * process group in `groups` (a zombie is no member: see isZombie). The exec driver asks both when
 * runs end, and a pass costs a stat read per process on the machine.
 */
export function scanProcesses(
  name: string,
  values: ReadonlySet<string>,
  since: number,
  groups: ReadonlySet<number>,
): { tagged: Map<string, number[]>; members: Map<number, number[]> } {
  const tagged = new Map<string, number[]>();
  const members = new Map<number, number[]>();
  if (values.size === 0 && groups.size === 0) return { tagged, members };
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return { tagged, members };
  }
  countPass();
  const prefix = Buffer.from(`${name}=`);
  const started = new Map<number, number>();
  for (const e of entries) {
    const c = e.charCodeAt(0);
    if (c < 48 || c > 57 || Number(e) === process.pid) continue;
    const s = readStat(e);
    if (!s || isZombie(s)) continue;
    if (groups.has(s.pgrp)) push(members, s.pgrp, Number(e));
    if (values.size === 0 || s.starttime < since) continue;
    let env: Buffer;
    try {
      env = fs.readFileSync(`/proc/${e}/environ`);
    } catch {
      continue;
    }
    let at = env.indexOf(prefix);
    while (at > 0 && env[at - 1] !== 0) at = env.indexOf(prefix, at + 1);
    if (at < 0) continue;
    const end = env.indexOf(0, at);
    const value = env.toString('utf8', at + prefix.length, end < 0 ? env.length : end);
    if (!values.has(value)) continue;
    push(tagged, value, Number(e));
    started.set(Number(e), s.starttime);
  }
  // /proc is listed as text (1022 before 998): the oldest process of a tag first, its leader as a rule.
  for (const list of tagged.values()) list.sort((a, b) => started.get(a)! - started.get(b)! || a - b);
  return { tagged, members };
}

function push<K>(map: Map<K, number[]>, key: K, pid: number): void {
  const list = map.get(key);
  if (list) list.push(pid);
  else map.set(key, [pid]);
}
