/**
 * Running one child process and measuring it: wall time with process.hrtime around spawn, and
 * (on request) its peak resident set size, from GNU time's "Maximum resident set size" when
 * /usr/bin/time is there, else by polling /proc/PID/status VmHWM.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const running = new Set();

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Ends every measured process still running (the bench was interrupted). */
export function killRunning() {
  for (const child of running) killGroup(child);
}

let timeBinChecked = false;
let timeBin = null;

/** GNU time, if installed and it understands -v -o. */
export function gnuTime() {
  if (timeBinChecked) return timeBin;
  timeBinChecked = true;
  const candidate = '/usr/bin/time';
  // BENCH_NO_GNU_TIME=1 makes the bench poll /proc instead, as on a machine without GNU time.
  if (process.env.BENCH_NO_GNU_TIME === '1' || !fs.existsSync(candidate)) return null;
  const r = spawnSync(candidate, ['-v', process.execPath, '-e', '0'], { encoding: 'utf8' });
  if (r.status === 0 && /Maximum resident set size/.test(r.stderr)) timeBin = candidate;
  return timeBin;
}

/** How the peak RSS is measured on this machine (for the report). */
export function rssMethod() {
  return gnuTime() ? '/usr/bin/time -v (Maximum resident set size)' : 'polling /proc/PID/status VmHWM every 10 ms';
}

function readHwmKiB(pid) {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * CPU seconds (user, system) of this process's waited-for children and theirs, from
 * /proc/self/stat (cutime, cstime: clock ticks, 100 a second); null without /proc.
 */
function childrenCpu() {
  try {
    const text = fs.readFileSync('/proc/self/stat', 'latin1');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[13]) / 100, sys: Number(f[14]) / 100 };
  } catch {
    return null;
  }
}

/**
 * Run `cmd args` and resolve { ms, code, rssKiB, stderr, cpu }. `cpu` ({ user, sys } seconds, or
 * null) is what the process and every descendant reaped by it used: the kernel adds a child's
 * times to its parent's as it is reaped. It is this process's children's times before and after,
 * so it holds for one measured process at a time (figure 6 measures them in turn).
 * options: stdout: 'ignore' | a file path (the output is written there);
 *          rss: measure the peak RSS; expect: the exit code that counts as success (default 0);
 *          env: extra environment; tmp: a directory for GNU time's report;
 *          timeoutMs: kill the process (group) after this long (default 5 minutes).
 */
export function measure(cmd, args, options = {}) {
  const { stdout = 'ignore', rss = false, expect = 0, env = {}, tmp, timeoutMs = 300_000 } = options;
  const outFd = stdout === 'ignore' ? 'ignore' : fs.openSync(stdout, 'w');
  const time = rss ? gnuTime() : null;
  let report = null;
  let file = cmd;
  let argv = args;
  if (time) {
    report = path.join(tmp, `time-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.txt`);
    file = time;
    argv = ['-v', '-o', report, cmd, ...args];
  }
  return new Promise((resolve, reject) => {
    const cpu0 = childrenCpu();
    const started = process.hrtime.bigint();
    // Its own process group, so that a timeout (or the bench's Ctrl-C) ends GNU time's child too.
    const child = spawn(file, argv, { stdio: ['ignore', outFd, 'pipe'], env: { ...process.env, ...env }, detached: true });
    running.add(child);
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => {
      if (stderr.length < 20000) stderr += d;
    });
    let timedOut = false;
    const killer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    let hwm = null;
    let poll = null;
    if (rss && !time) {
      poll = setInterval(() => {
        const v = readHwmKiB(child.pid);
        if (v !== null) hwm = v;
      }, 10);
    }
    child.on('error', (err) => {
      running.delete(child);
      clearTimeout(killer);
      if (poll) clearInterval(poll);
      if (outFd !== 'ignore') fs.closeSync(outFd);
      reject(err);
    });
    child.on('close', (code, signal) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const cpu1 = childrenCpu();
      const cpu = cpu0 && cpu1 ? { user: cpu1.user - cpu0.user, sys: cpu1.sys - cpu0.sys } : null;
      clearTimeout(killer);
      running.delete(child);
      if (poll) clearInterval(poll);
      if (outFd !== 'ignore') fs.closeSync(outFd);
      let rssKiB = hwm;
      if (report) {
        const text = fs.existsSync(report) ? fs.readFileSync(report, 'utf8') : '';
        fs.rmSync(report, { force: true });
        const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(text);
        rssKiB = m ? Number(m[1]) : null;
        // GNU time reports the child's status as "Exit status: N" and exits with it.
      }
      if (timedOut) {
        reject(new Error(`${path.basename(String(cmd))} ${args.map(String).slice(0, 3).join(' ')} … took longer than ${timeoutMs / 1000} s: killed`));
        return;
      }
      if (code !== expect) {
        const shown = [cmd, ...args].map((a) => path.basename(String(a))).join(' ');
        reject(new Error(`${shown} exited ${code ?? signal} (expected ${expect})\n${stderr.trim().split('\n').slice(-5).join('\n')}`));
        return;
      }
      resolve({ ms, code, rssKiB, stderr, cpu });
    });
  });
}

/** Run a command that is set-up, not measured: throws with its stderr when it fails. */
export function setup(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, ...options });
  if (r.status !== 0) {
    throw new Error(`set-up step failed (${[cmd, ...args].map((a) => path.basename(String(a))).join(' ')}): exit ${r.status}\n${r.stderr}`);
  }
  return r.stdout;
}
