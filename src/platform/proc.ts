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
  let fd: number;
  try {
    fd = fs.openSync(`/proc/${pid}/stat`, 'r');
  } catch {
    return null;
  }
  let n: number;
  try {
    n = fs.readSync(fd, STAT_BUF, 0, STAT_BUF.length, null);
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  // Read from the bytes: a pass reads hundreds of these, and a string split into fifty was garbage.
  const close = n > 0 ? STAT_BUF.lastIndexOf(0x29, n - 1) : -1;
  if (close < 0 || close + 2 >= n) return null;
  let field = 3;
  let pgrp = 0;
  let starttime = 0;
  for (let i = close + 3; i < n && field <= 22; i++) {
    const b = STAT_BUF[i];
    if (b === 0x20) field++;
    else if (field === 5) pgrp = pgrp * 10 + b - 48;
    else if (field === 22) starttime = starttime * 10 + b - 48;
  }
  return { state: String.fromCharCode(STAT_BUF[close + 2]), pgrp, starttime };
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

/** One buffer for every environment read, grown to the largest met (most are a page or two). */
let envBuf = Buffer.allocUnsafe(16384);

/**
 * The value of the first `NAME=` entry (`prefix`) in a process's environment; null when it has
 * none or cannot be read. Read into one buffer kept for the next: readFileSync made a buffer (and
 * an fstat) for each process of each pass, most of the garbage of a busy apply.
 */
function envValue(pid: string, prefix: Buffer): string | null {
  let fd: number;
  try {
    fd = fs.openSync(`/proc/${pid}/environ`, 'r');
  } catch {
    return null;
  }
  try {
    let len = 0;
    for (;;) {
      if (len === envBuf.length) {
        const bigger = Buffer.allocUnsafe(len * 2);
        envBuf.copy(bigger, 0, 0, len);
        envBuf = bigger;
      }
      const n = fs.readSync(fd, envBuf, len, envBuf.length - len, null);
      if (n === 0) break;
      len += n;
    }
    const env = envBuf.subarray(0, len);
    let at = env.indexOf(prefix);
    while (at > 0 && env[at - 1] !== 0) at = env.indexOf(prefix, at + 1);
    if (at < 0) return null;
    const end = env.indexOf(0, at);
    return env.toString('utf8', at + prefix.length, end < 0 ? len : end);
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * One pass over /proc for two questions at once: the live processes whose environment holds
 * `NAME=value` for one of `values` (started at or after `since`), and the live members of each
 * process group in `groups` (a zombie is no member: see isZombie). The exec driver asks both when
 * runs end, and a pass costs a stat read per process on the machine.
 *
 * `others`: the groups of other runs still going, each by its leader's start time. A member of
 * such a group is that run's, never one of `values`': a group belongs to one session, only a
 * process of that session can join it, and each run is a session of its own (its leader's setsid),
 * which a process of another run can enter by no call. That holds while the number is the run's
 * group: its leader seen alive in this pass with the run's start time has held the number since
 * (Linux frees a pid only once no process has it as pid, group or session), so its members'
 * environments are not read. In a busy apply these are most of the new processes (each run in
 * flight is a wrapper and a command), and their environments were most of a pass's cost.
 */
export function scanProcesses(
  name: string,
  values: ReadonlySet<string>,
  since: number,
  groups: ReadonlySet<number>,
  others: ReadonlyMap<number, number> = new Map(),
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
  // Processes whose environment may hold a tag, read once every stat is: a member may come before its leader.
  const candidates: { pid: string; pgrp: number; starttime: number }[] = [];
  /** Leaders of `others` seen alive with their run's start time. */
  const leaders = new Set<number>();
  for (const e of entries) {
    const c = e.charCodeAt(0);
    if (c < 48 || c > 57 || Number(e) === process.pid) continue;
    const s = readStat(e);
    if (!s || isZombie(s)) continue;
    if (groups.has(s.pgrp)) push(members, s.pgrp, Number(e));
    if (s.pgrp === Number(e) && others.get(s.pgrp) === s.starttime) leaders.add(s.pgrp);
    if (values.size === 0 || s.starttime < since) continue;
    candidates.push({ pid: e, pgrp: s.pgrp, starttime: s.starttime });
  }
  for (const { pid, pgrp, starttime } of candidates) {
    if (leaders.has(pgrp)) continue;
    const value = envValue(pid, prefix);
    if (value === null || !values.has(value)) continue;
    push(tagged, value, Number(pid));
    started.set(Number(pid), starttime);
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
