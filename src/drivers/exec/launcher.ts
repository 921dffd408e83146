/**
 * The exec driver's launcher: a small process of its own (its own process group, so a Ctrl-C at
 * the terminal does not reach it) that starts every run for dcm and outlives dcm.
 *
 * Why a process apart: forking costs in proportion to the forking process's memory, and dcm (its
 * store, its modules) is several times this script; starting 5,000 short runs from here costs
 * about what a bare loop does. Why it outlives dcm: it claims each run and writes its pid as soon
 * as it has one (`.pid`). After a kill -9 of dcm it goes on until its last run has ended.
 *
 * Each run is the command under a small sh wrapper (./wrapper.ts), the leader of the run's own
 * process group, which writes the run's exit status (`.status`) itself as its last act: the
 * status of a command that ended is never lost, whatever became of dcm and of this launcher. The
 * wrapper also copies the command's stderr into the log (in the order written, through `tee`)
 * and into `.err`, whose last line is the failure's reason (SPEC §7.2). It exits with the
 * command's code, which this launcher passes on: dcm reads `.status` only for a wrapper that did
 * not exit by itself.
 *
 * Protocol, one JSON object per line. dcm → launcher: `{id, file, args, cwd, env, base}` (env is
 * added to the launcher's own environment; the log is `<base>.log`). Launcher → dcm:
 * `{id, pid, start}` once started, then `{id, code, signal}` when it exited, or `{id, error}`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import readline from 'node:readline';
import { procStartTime } from './procs.js';
import { PRIVATE_FILE } from '../../platform/private.js';
import { WRAPPER, WRAPPER_SHELL } from './wrapper.js';

interface Launch {
  id: number;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  base: string;
}

/**
 * The umask dcm was started with, for the commands; this process and the wrappers it starts use
 * 077, so that every file a run leaves beside its log is private whatever the user's umask.
 */
const USER_UMASK = process.umask(0o077).toString(8).padStart(4, '0');

let running = 0;
let dcmGone = false;
const send = (msg: object) => {
  if (dcmGone) return;
  process.stdout.write(`${JSON.stringify(msg)}\n`);
};
// dcm died: nobody reads any more, and a write would raise EPIPE. The runs go on all the same.
process.stdout.on('error', () => {
  dcmGone = true;
});

function maybeExit(): void {
  if (dcmGone && running === 0) process.exit(0);
}

function launch(req: Launch): void {
  // Claim the run: a later dcm that gave it up (it found no trace of it) has claimed it first.
  let claim: number;
  try {
    claim = fs.openSync(`${req.base}.pid`, 'wx', PRIVATE_FILE);
  } catch (err) {
    send({ id: req.id, error: `not started: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? 'given up by a later dcm' : (err as Error).message}` });
    return;
  }
  // Every form of the claim names the run it is for: a file left by an earlier strategy in the
  // same folder is never taken for this run's.
  const runId = req.env.DCM_RUN_ID ?? '';
  const launching = `launching ${process.pid} ${runId}\n`;
  fs.writeSync(claim, launching);
  let fd: number;
  try {
    fd = fs.openSync(`${req.base}.log`, 'w', PRIVATE_FILE);
    try {
      fs.fchmodSync(fd, PRIVATE_FILE); // a log an earlier dcm left readable by others
    } catch {
      // someone else's file we may write to: its mode is not ours to change
    }
  } catch (err) {
    fs.closeSync(claim);
    send({ id: req.id, error: `cannot open the run's log: ${(err as Error).message}` });
    return;
  }
  let child;
  try {
    child = spawn(WRAPPER_SHELL, ['-c', WRAPPER, 'dcm-run', req.base, USER_UMASK, req.file, ...req.args], {
      detached: true,
      stdio: ['ignore', fd, fd],
      cwd: req.cwd,
      env: { ...process.env, ...req.env },
    });
  } catch (err) {
    fs.closeSync(claim);
    send({ id: req.id, error: (err as Error).message });
    return;
  } finally {
    fs.closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    fs.closeSync(claim);
    child.once('error', (err) => {
      const missing = !fs.existsSync(req.cwd) ? ` (no such folder: ${req.cwd})` : '';
      send({ id: req.id, error: `${err.message}${missing}` });
    });
    return;
  }
  running++;
  // The pid first, before dcm hears of it: written synchronously, it is there even if dcm dies now.
  fs.writeSync(claim, `${pid} ${process.pid} ${runId}\n`.padEnd(launching.length), 0);
  fs.closeSync(claim);
  send({ id: req.id, pid, start: procStartTime(pid) });
  child.once('exit', (code, signal) => {
    // The wrapper wrote the status and exits with the same code; a wrapper ended by a signal (a
    // timeout's kill) wrote none, or wrote it just before the signal came (dcm reads it then).
    running--;
    send({ id: req.id, code, signal });
    maybeExit();
  });
}

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim()) launch(JSON.parse(line) as Launch);
});
lines.on('close', () => {
  dcmGone = true;
  maybeExit();
});
