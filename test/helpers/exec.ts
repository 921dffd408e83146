/**
 * Helpers for exec-driver tests: a state command that logs each of its runs itself (under flock),
 * and a search of /proc for processes a test started, found by a marker in their environment.
 */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { tempDir } from './cli.js';

/**
 * `step.sh ARGS…`: sleeps STEP_MIN_MS..STEP_MAX_MS, then appends one line to $RUNS, under flock:
 * `cloud|state|attempt|resumed|pid|start_ns|end_ns|args`; exits $STEP_EXIT (default 0).
 */
const STEP_SH = `#!/bin/sh
start=$(date +%s%N)
min=\${STEP_MIN_MS:-0}; max=\${STEP_MAX_MS:-$min}
secs=$(awk -v s="$$$(date +%N)" -v a="$min" -v b="$max" 'BEGIN{srand(s % 1000000007); printf "%.3f", (a + rand()*(b-a))/1000}')
sleep "$secs"
end=$(date +%s%N)
line="$DCM_CLOUD|$DCM_STATE|$DCM_ATTEMPT|\${DCM_RESUMED:-0}|$$|$start|$end|$*"
flock "$RUNS.lock" sh -c 'printf "%s\\n" "$1" >> "$RUNS"' x "$line"
exit \${STEP_EXIT:-0}
`;

export interface Run {
  cloud: string;
  state: string;
  attempt: number;
  resumed: boolean;
  pid: number;
  start: number;
  end: number;
  args: string;
}

export interface ExecFixture {
  dir: string;
  db: string;
  /** The runs log the state commands append to. */
  runs: string;
  step: string;
  /** Put in dcm's environment: every process it starts inherits it. */
  env: Record<string, string>;
  cleanup: () => void;
  /** Write a config file (YAML text) into the fixture's folder; returns its path. */
  config(text: string, name?: string): string;
  readRuns(): Run[];
  /** Processes (not zombies) started under this fixture's marker that are still alive. */
  leftovers(): number[];
}

export function execFixture(): ExecFixture {
  const t = tempDir('dcm-exec-');
  const step = path.join(t.dir, 'step.sh');
  fs.writeFileSync(step, STEP_SH, { mode: 0o755 });
  const runs = path.join(t.dir, 'runs.log');
  const mark = crypto.randomBytes(8).toString('hex');
  const env = { RUNS: runs, EXECTEST_MARK: mark };
  return {
    dir: t.dir,
    db: t.db,
    runs,
    step,
    env,
    cleanup: () => {
      for (const pid of liveMarked(mark)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      t.cleanup();
    },
    config(text, name = 'exec.yaml') {
      const file = path.join(t.dir, name);
      fs.writeFileSync(file, text);
      return file;
    },
    readRuns: () => readRuns(runs),
    leftovers: () => liveMarked(mark),
  };
}

export function readRuns(file: string): Run[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [cloud, state, attempt, resumed, pid, start, end, ...args] = l.split('|');
      return {
        cloud,
        state,
        attempt: Number(attempt),
        resumed: resumed === '1',
        pid: Number(pid),
        start: Number(start),
        end: Number(end),
        args: args.join('|'),
      };
    });
}

/** Live processes whose environment holds EXECTEST_MARK=<mark> (zombies are dead). */
export function liveMarked(mark: string): number[] {
  const needle = Buffer.from(`EXECTEST_MARK=${mark}\0`);
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state === 'Z' || state === 'X') continue;
      if (fs.readFileSync(`/proc/${e}/environ`).includes(needle)) out.push(Number(e));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** The most subclouds whose runs overlap in time, by the runs' own log. */
export function peakConcurrent(runs: readonly Run[]): number {
  const events = runs.flatMap((r) => [
    { t: r.start, d: 1 },
    { t: r.end, d: -1 },
  ]);
  // Ends before starts at the same instant: touching runs do not overlap.
  events.sort((a, b) => a.t - b.t || a.d - b.d);
  let cur = 0;
  let peak = 0;
  for (const e of events) peak = Math.max(peak, (cur += e.d));
  return peak;
}

/** Pairs of runs of one subcloud that overlap in time (should be none). */
export function overlapsPerCloud(runs: readonly Run[]): string[] {
  const by = new Map<string, Run[]>();
  for (const r of runs) by.set(r.cloud, [...(by.get(r.cloud) ?? []), r]);
  const out: string[] = [];
  for (const [cloud, rs] of by) {
    rs.sort((a, b) => a.start - b.start);
    for (let i = 1; i < rs.length; i++) {
      if (rs[i].start < rs[i - 1].end) out.push(`${cloud}: ${rs[i - 1].state}#${rs[i - 1].attempt} overlaps ${rs[i].state}#${rs[i].attempt}`);
    }
  }
  return out;
}
