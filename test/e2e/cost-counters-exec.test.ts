/**
 * The exec path's cost per run, counted exactly by the kernel's own word (issue 21 "guards that do
 * not flake"): the whole apply, dcm and its launcher and every run's processes, under `strace -f`,
 * which lists each program executed and each file opened. Processes spawned and files opened per
 * run are held here, so a change that adds a process or a file to every run fails on any machine;
 * the time it costs stays in the bench (figure 6). Debian's strace: `.ci/run` installs it when
 * missing.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, dcmOk, tempDir } from '../helpers/cli.js';
import { names } from '../helpers/history.js';
import { NATIVE_WRAPPER, WRAPPER_SHELL } from '../../src/drivers/exec/wrapper.js';

let t: ReturnType<typeof tempDir>;
afterEach(() => t?.cleanup());

const hasStrace = spawnSync('strace', ['-V']).status === 0;

/**
 * What `strace -f` saw: the processes made, each program executed (by its file's name), and each
 * file opened under `dir` (by the last part of its name: `.log`, `.pid`, …). A call that another
 * process's line cut in two is printed as `… <unfinished …>` then `<… resumed>`; its name and path
 * are on the first part, and every execve here succeeds (checked: each resumed line ends `= 0`).
 */
function traced(file: string, dir: string) {
  const execs = new Map<string, number>();
  const opens = new Map<string, number>();
  const looks = new Map<string, number>();
  let forks = 0;
  let mkdirs = 0;
  let fchmods = 0;
  let execFailed = 0;
  // Lines on the pipes between dcm and its launcher (each a JSON object starting `{"id":`), by
  // the process that wrote them: dcm (the first process traced) and its launcher (the other
  // process that executed node).
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const dcmPid = /^(\d+) /.exec(lines[0] ?? '')?.[1];
  const launcherPid = lines
    .map((l) => /^(\d+) +execve\("([^"]+)"/.exec(l))
    .find((m) => m !== null && m[1] !== dcmPid && m[2] === process.execPath)?.[1];
  const pipeWrites = { dcm: 0, launcher: 0 };
  /** Passes over every process (a listing of /proc) by dcm: each reads a stat per process on the machine. */
  let procPasses = 0;
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const line of lines) {
    const write = /^(\d+) +write\(\d+, "\{\\"id\\":/.exec(line);
    if (write) {
      if (write[1] === dcmPid) pipeWrites.dcm++;
      if (write[1] === launcherPid) pipeWrites.launcher++;
      continue;
    }
    if (/\bfchmod\(/.test(line)) fchmods++;
    if (line.startsWith(`${dcmPid} `) && /\bopenat\(AT_FDCWD, "\/proc", /.test(line)) procPasses++;
    // A new process (a thread is a clone with CLONE_THREAD: node's own workers, not counted).
    if (/\b(clone3?|v?fork)\(/.test(line) && !line.includes('CLONE_THREAD')) {
      forks++;
      continue;
    }
    const exec = /\bexecve\("([^"]+)"/.exec(line);
    if (exec) {
      if (!/= 0$|<unfinished \.\.\.>$/.test(line)) execFailed++;
      bump(execs, path.basename(exec[1]));
      continue;
    }
    if (/execve resumed>/.test(line) && !/= 0$/.test(line)) execFailed++;
    const open = /\bopen(?:at)?\((?:AT_FDCWD, )?"([^"]+)"/.exec(line);
    if (open && open[1].startsWith(dir)) bump(opens, path.extname(open[1]) || path.basename(open[1]));
    const look = /\b(?:access|faccessat2?)\((?:AT_FDCWD, )?"([^"]+)"/.exec(line);
    if (look && look[1].startsWith(dir)) bump(looks, path.extname(look[1]) || path.basename(look[1]));
    if (/\bmkdir(?:at)?\(/.test(line) && line.includes(dir)) mkdirs++;
  }
  expect(execFailed).toBe(0);
  expect([dcmPid, launcherPid].every((p) => p !== undefined)).toBe(true);
  return { forks, execs, opens, looks, mkdirs, fchmods, pipeWrites, procPasses };
}

/** An apply of `n` subclouds × 5 states of /bin/true, window 10, under `strace -f`: what it saw. */
function tracedApply(n: number, env: NodeJS.ProcessEnv = {}) {
  // As for tmux and chromium: missing, the test says what to install rather than pass unseen.
  if (!hasStrace) throw new Error('strace is not installed: apt-get install -y strace (.ci/run installs it)');
  t = tempDir('dcm-cost-exec-');
  const cfg = path.join(t.dir, 'true.yaml');
  fs.writeFileSync(cfg, 'states:\n  "*": [/bin/true]\n');
  const db = path.join(t.dir, 'dcm.db');
  dcmOk(['--db', db, 'subcloud', 'add', ...names(n)]);
  dcmOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '10', '--driver', 'exec', '--exec-config', cfg]);
  const trace = path.join(t.dir, 'strace.txt');
  const r = spawnSync(
    'strace',
    ['-f', '-qq', '-e', 'trace=clone,clone3,fork,vfork,execve,open,openat,creat,mkdir,mkdirat,fchmod,write,access,faccessat,faccessat2', '-e', 'signal=none', '-o', trace, process.execPath, BIN, '--db', db, '-q', 'strategy', 'apply'],
    { encoding: 'utf8', cwd: t.dir, env: { ...process.env, ...env } },
  );
  expect([r.status, r.stderr]).toEqual([0, '']);
  return traced(trace, `${db}.logs${path.sep}`);
}

describe('exec path: processes and files per run, counted by strace', () => {
  const n = 40;
  const runs = n * 5;

  test('each run is two programs (native/dcm-run and the command), five opens in its log folder, and no look at /proc', () => {
    // Built by the install (native/build.mjs); a tree where it was not would run the sh wrapper
    // below and fail here, not pass unseen.
    expect(NATIVE_WRAPPER).not.toBeNull();
    const { forks, execs, opens, looks, mkdirs, fchmods, pipeWrites, procPasses } = tracedApply(n);
    // Processes: per run exactly its wrapper (dcm-run, which takes the run, keeps stderr apart and
    // writes the status) and the command; besides them only dcm and its one launcher (both node).
    // One more process per run (a helper, a shell) would make one of these 400 or more.
    expect(Object.fromEntries(execs)).toEqual({ 'dcm-run': runs, true: runs, [path.basename(process.execPath)]: 2 });
    // And no process that runs no program of its own: two made per run, and the launcher.
    expect(forks).toBe(2 * runs + 1);
    // Files opened in the run-log folder, per run: the launcher's claim (.pid) and the log, the
    // wrapper's take (.run) and status (.status), which the launcher reads back once: the wrapper
    // says there whether anything of the run was left. Five per run; nothing else there is
    // opened: a run that writes no stderr opens no .err, dcm itself does not read the status of a
    // wrapper that exited by itself (it exits with the code it wrote), and it opens $DCM_NEXT
    // (.next) only when the run wrote one: it looks for it once (none here).
    expect(Object.fromEntries(opens)).toEqual({ '.pid': runs, '.log': runs, '.run': runs, '.status': 2 * runs });
    expect(Object.fromEntries(looks)).toEqual({ '.next': runs });
    // Nothing of any run was left (the wrapper, the run's subreaper, said so): dcm looked for no
    // leftovers in /proc. A pass for the runs that end in a turn made this most of dcm's own CPU
    // a run (BENCHMARKS figure 6s).
    expect(procPasses).toBe(0);
    // Folders: the strategy's and one per subcloud, made once, not once per run.
    expect(mkdirs).toBeLessThanOrEqual(n + 4);
    expect(mkdirs).toBeGreaterThanOrEqual(n);
    // A new log is private from its create (the launcher's umask): no chmod of it, nor of anything else.
    expect(fchmods).toBe(0);
    // The launcher answers each run twice (started, exited): the starts of one turn in one write,
    // each end at once (with the starts queued before it); dcm writes the launches of one turn at
    // once (the window's first ten, at least). One write an answer, or a launch, would make these
    // 400 and 200.
    expect(pipeWrites.launcher).toBeGreaterThan(0);
    expect(pipeWrites.launcher).toBeLessThan(2 * runs);
    expect(pipeWrites.dcm).toBeGreaterThan(0);
    expect(pipeWrites.dcm).toBeLessThan(runs);
  });

  test('where native/dcm-run was not built (DCM_RUN_WRAPPER=sh): three programs a run (its sh wrapper, the stderr tee, the command) and five opens', () => {
    const { forks, execs, opens, procPasses } = tracedApply(n, { DCM_RUN_WRAPPER: 'sh' });
    // Its sh is a POSIX one, dash where there is one: never bash, which costs twice as much to start.
    const shell = path.basename(WRAPPER_SHELL);
    expect(Object.fromEntries(execs)).toEqual({ [shell]: runs, tee: runs, true: runs, [path.basename(process.execPath)]: 2 });
    expect(forks).toBe(3 * runs + 1);
    // The tee opens .err whether or not stderr comes. The launcher does not read the status of
    // an sh wrapper: it never says whether anything of the run was left.
    expect(Object.fromEntries(opens)).toEqual({ '.pid': runs, '.log': runs, '.run': runs, '.err': runs, '.status': runs });
    // So dcm looks for each run's leftovers: one pass for the runs that end in a turn.
    expect(procPasses).toBeGreaterThan(0);
    expect(procPasses).toBeLessThanOrEqual(runs);
  });
});
