/**
 * Helpers for the tests of the seams between dcm, its launcher, the runs and the file (issue 14):
 * a state command that logs its own start and end (under flock), a judge of such a log (no two
 * runs of one subcloud overlap, no (subcloud, state) exits 0 twice, the window is never exceeded),
 * another process holding the file's write lock, and searches of /proc (the launcher, the
 * processes carrying an environment variable).
 */
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, sleep, waitFor } from './cli.js';
import { openTestDb } from './db.js';
import type { Db } from '../../src/platform/db.js';
import { execFixture, readRuns, type ExecFixture, type Run } from './exec.js';

/**
 * `seam.sh BODY`: appends `cloud|state|attempt|resumed|pid|start_ns|run_id|fence` to
 * `$RUNS.starts`, runs BODY with /bin/sh, then appends
 * `cloud|state|attempt|resumed|pid|start_ns|end_ns|code` to `$RUNS` and exits with BODY's code.
 * A SIGTERM (a timeout, a second Ctrl-C) before BODY has ended is logged as code `TERM` when the
 * run goes. Each run logs one end, the code it exits with: once BODY has ended, a SIGTERM is
 * ignored (a kill that comes as a run finishes would otherwise log it twice, 0 then TERM). Its
 * wrapper dies of that kill all the same, writing no status: dcm rightly takes it for a timeout.
 */
const SEAM_SH = `#!/bin/sh
start=$(date +%s%N)
flock "$RUNS.lock" sh -c 'printf "%s\\n" "$1" >> "$RUNS.starts"' x "$DCM_CLOUD|$DCM_STATE|$DCM_ATTEMPT|\${DCM_RESUMED:-0}|$$|$start|\${DCM_RUN_ID:-}|\${DCM_FENCE:-}"
log_end() {
  end=$(date +%s%N)
  flock "$RUNS.lock" sh -c 'printf "%s\\n" "$1" >> "$RUNS"' x "$DCM_CLOUD|$DCM_STATE|$DCM_ATTEMPT|\${DCM_RESUMED:-0}|$$|$start|$end|$1"
}
trap 'trap "" TERM; log_end TERM; exit 143' TERM
sh -c "$1" &
child=$!
wait $child
code=$?
trap '' TERM
log_end $code
exit $code
`;

/**
 * `kill-launcher.sh MARKDIR`: once (the first call that creates MARKDIR), SIGKILLs the launcher
 * among its ancestors (a `…launcher.js` process whose parent is dcm, `…bin/dcm.js`), and writes
 * its pid in MARKDIR/pid.
 */
const KILL_LAUNCHER_SH = `#!/bin/sh
mkdir "$1" 2>/dev/null || exit 0
cmd() { tr '\\0' ' ' < /proc/$1/cmdline 2>/dev/null; }
parent() { sed 's/.*) //' /proc/$1/stat | cut -d' ' -f2; }
p=$PPID
while [ "$p" -gt 1 ]; do
  q=$(parent $p)
  if cmd $p | grep -q 'launcher\\.js' && cmd $q | grep -q 'dcm\\.js'; then
    echo $p > "$1/pid"
    kill -9 $p
    exit 0
  fi
  p=$q
done
exit 0
`;

export interface Start {
  cloud: string;
  state: string;
  attempt: number;
  resumed: boolean;
  pid: number;
  start: number;
  runId: string;
  fence: string;
}

export interface SeamFixture extends ExecFixture {
  seam: string;
  /** See KILL_LAUNCHER_SH. */
  killLauncher: string;
  starts: string;
  readStarts(): Start[];
  /** SIGKILL every process of the fixture still alive (what a probe left behind). */
  killAll(): Promise<void>;
  /** Runs that ended (or were SIGTERMed), with `code` = their exit code as text (`TERM` for a SIGTERM). */
  ended(): (Run & { code: string })[];
}

export function seamFixture(): SeamFixture {
  const f = execFixture();
  const seam = path.join(f.dir, 'seam.sh');
  fs.writeFileSync(seam, SEAM_SH, { mode: 0o755 });
  const killLauncher = path.join(f.dir, 'kill-launcher.sh');
  fs.writeFileSync(killLauncher, KILL_LAUNCHER_SH, { mode: 0o755 });
  const starts = `${f.runs}.starts`;
  return {
    ...f,
    seam,
    killLauncher,
    starts,
    readStarts: () => readStarts(starts),
    ended: () => readRuns(f.runs).map((r) => ({ ...r, code: r.args })),
    killAll: async () => {
      for (const pid of f.leftovers()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      await waitFor(() => f.leftovers().length === 0, 10_000);
    },
  };
}

export function readStarts(file: string): Start[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [cloud, state, attempt, resumed, pid, start, runId, fence] = l.split('|');
      return { cloud, state, attempt: Number(attempt), resumed: resumed === '1', pid: Number(pid), start: Number(start), runId, fence };
    });
}

/**
 * What is wrong with a run log, as text (none: all is well): two runs of one subcloud overlapping
 * (a run that ended, or any start inside another run of its subcloud), a (subcloud, state) with
 * two runs that exited 0 (of those `counts` takes as finished), more subclouds at once than
 * `window` (when given).
 */
export function judgeRuns(
  ended: readonly (Run & { code: string })[],
  starts: readonly Start[],
  window?: number,
  counts: (r: Run) => boolean = () => true,
): string[] {
  const problems: string[] = [];
  const byCloud = new Map<string, (Run & { code: string })[]>();
  for (const r of ended) byCloud.set(r.cloud, [...(byCloud.get(r.cloud) ?? []), r]);
  for (const [cloud, rs] of byCloud) {
    rs.sort((a, b) => a.start - b.start);
    for (let i = 1; i < rs.length; i++) {
      if (rs[i].start < rs[i - 1].end) problems.push(`${cloud}: ${rs[i - 1].state}#${rs[i - 1].attempt} overlaps ${rs[i].state}#${rs[i].attempt}`);
    }
  }
  // A start inside a run of its subcloud that ended (catches runs that never logged their end).
  for (const s of starts) {
    for (const r of byCloud.get(s.cloud) ?? []) {
      if (r.pid !== s.pid && s.start > r.start && s.start < r.end) {
        problems.push(`${s.cloud}: ${s.state}#${s.attempt} started inside ${r.state}#${r.attempt}`);
      }
    }
  }
  const ok = new Map<string, number>();
  for (const r of ended) if (r.code === '0' && counts(r)) ok.set(`${r.cloud}/${r.state}`, (ok.get(`${r.cloud}/${r.state}`) ?? 0) + 1);
  for (const [k, n] of ok) if (n > 1) problems.push(`${k}: ${n} runs exited 0`);
  if (window !== undefined) {
    // Starts without an end (killed by SIGKILL) count from their start to the end of the log.
    const endOf = new Map(ended.map((r) => [r.pid, r.end]));
    const last = Math.max(0, ...ended.map((r) => r.end), ...starts.map((s) => s.start));
    const spans = starts.map((s) => ({ start: s.start, end: endOf.get(s.pid) ?? last }));
    // Runs at once (a subcloud between two of its states holds its slot too, so this is a lower
    // bound of what the window bounds).
    const runPeak = peakOf(spans);
    if (runPeak > window) problems.push(`${runPeak} runs at once, window ${window}`);
  }
  return problems;
}

function peakOf(spans: { start: number; end: number }[]): number {
  const ev = spans.flatMap((s) => [
    { t: s.start, d: 1 },
    { t: s.end, d: -1 },
  ]);
  ev.sort((a, b) => a.t - b.t || a.d - b.d);
  let cur = 0;
  let peak = 0;
  for (const e of ev) peak = Math.max(peak, (cur += e.d));
  return peak;
}

/** Nanoseconds since the epoch, as `date +%s%N` prints them. */
export const nowNs = (): number => Date.now() * 1e6;

/** History rows still `running`, with the process recorded for them. */
export async function runningRows(db: string): Promise<{ cloud: string; state: string; attempt: number; pid: number | null; pgid: number | null }[]> {
  const d = await openTestDb(db, { readonly: true, timeout: 10_000 });
  try {
    return (await d
      .prepare(
        `SELECT sc.name AS cloud, h.state, h.attempt, h.pid, h.pgid FROM step_history h JOIN strategy_step st ON st.id = h.step_id
         JOIN subcloud sc ON sc.id = st.subcloud_id WHERE h.outcome = 'running'`,
      )
      .all()) as { cloud: string; state: string; attempt: number; pid: number | null; pgid: number | null }[];
  } finally {
    d.close();
  }
}

export async function sql<T>(db: string, fn: (d: Db) => T | Promise<T>): Promise<T> {
  const d = await openTestDb(db, { timeout: 10_000 });
  try {
    return await fn(d);
  } finally {
    d.close();
  }
}

export const alive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const st = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return st !== 'Z' && st !== 'X';
  } catch {
    return false;
  }
};

const ppidOf = (pid: number): number => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
};

/** The fixture's launcher (a `node …/launcher.js` carrying its marker, a child of `parent` if given), if one runs. */
export function launcherPid(f: ExecFixture, parent?: number): number | null {
  const mine = new Set(f.leftovers());
  for (const p of mine) {
    try {
      if (!fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('launcher.js')) continue;
      if (parent === undefined || ppidOf(p) === parent) return p;
    } catch {
      // gone
    }
  }
  return null;
}

/** Live processes (not zombies) whose environment holds `NAME=VALUE` (or any `NAME=` when value is omitted). */
export function withEnv(name: string, value?: string): number[] {
  const needle = Buffer.from(value === undefined ? `${name}=` : `${name}=${value}\0`);
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (!alive(Number(e))) continue;
      const env = fs.readFileSync(`/proc/${e}/environ`);
      const i = env.indexOf(needle);
      if (i === 0 || (i > 0 && env[i - 1] === 0)) out.push(Number(e));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

const HOLDER = `
const Database = require('better-sqlite3');
const fs = require('node:fs');
const [db, ms, trigger] = process.argv.slice(1);
const d = new Database(db, { timeout: 30000 });
if (trigger) {
  process.stdout.write('ready ' + Date.now() + '\\n');
  while (!fs.existsSync(trigger)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
}
d.exec('BEGIN IMMEDIATE');
process.stdout.write('held ' + Date.now() + '\\n');
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(ms));
d.exec('COMMIT');
d.close();
process.stdout.write('released ' + Date.now() + '\\n');
`;

export interface Holder {
  child: ChildProcess;
  /** With a trigger: resolves once the holder watches for it. */
  ready: Promise<number>;
  /** Resolves with the time (ms) the write lock was taken. */
  held: Promise<number>;
  /** Resolves with the time (ms) it was given back. */
  released: Promise<number>;
}

/**
 * Another process (node + better-sqlite3, as another tool would) holding the file's write lock
 * (`BEGIN IMMEDIATE`) for `ms`; with `trigger`, only once that file exists (it looks every
 * millisecond, so a state command can have the lock taken the moment it runs).
 */
export function holdWriteLock(db: string, ms: number, trigger?: string): Holder {
  const child = spawn(process.execPath, ['-e', HOLDER, db, String(ms), ...(trigger ? [trigger] : [])], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const waiters: { word: string; resolve: (t: number) => void; reject: (e: Error) => void }[] = [];
  const check = () => {
    for (const w of [...waiters]) {
      const m = new RegExp(`${w.word} (\\d+)`).exec(out);
      if (m) {
        w.resolve(Number(m[1]));
        waiters.splice(waiters.indexOf(w), 1);
      }
    }
  };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    check();
  });
  child.on('close', (code) => {
    check();
    for (const w of waiters) w.reject(new Error(`the lock holder exited ${code} before '${w.word}'`));
  });
  const on = (word: string) => {
    const p = new Promise<number>((resolve, reject) => waiters.push({ word, resolve, reject }));
    p.catch(() => undefined);
    return p;
  };
  const ready = on('ready');
  const held = on('held');
  const released = on('released');
  return { child, ready, held, released };
}

/** Whether another process holds `file`'s write lock at this moment. */
export function writeLocked(file: string): boolean {
  const d = new Database(file, { timeout: 0, fileMustExist: true });
  try {
    d.exec('BEGIN IMMEDIATE');
    d.exec('ROLLBACK');
    return false;
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return true;
    throw err;
  } finally {
    d.close();
  }
}

const stopped = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'T';
};

/**
 * SIGSTOP an apply at a moment it holds none of `files`' write locks (the database; the simulated
 * sites' file). Frozen inside a write, it would hold the database (which every other process
 * rightly waits for, past any busy timeout) or the sites file (the far side, which a real frozen
 * host could never lock) until it ran again: a test that then writes or takes over would wait on it.
 */
export async function freezeBetweenWrites(child: ChildProcess, files: readonly string[]): Promise<void> {
  for (;;) {
    child.kill('SIGSTOP');
    await waitFor(() => stopped(child.pid!), 10_000, 1);
    if (!files.some(writeLocked)) return;
    child.kill('SIGCONT');
    await sleep(10);
  }
}

/** Wait for a line matching `re` in a growing text (a child's stderr). */
export async function waitForText(text: () => string, re: RegExp, timeoutMs = 60_000): Promise<void> {
  await waitFor(() => re.test(text()), timeoutMs, 10);
}
