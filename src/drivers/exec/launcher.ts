/**
 * The exec driver's launcher: a small process of its own (its own process group, so a Ctrl-C at
 * the terminal does not reach it) that starts every run for dcm and outlives dcm.
 *
 * Why a process apart: forking costs in proportion to the forking process's memory, and dcm (its
 * store, its modules) is several times this script; starting 5,000 short runs from here costs
 * about what a bare loop does. Why it outlives dcm: it claims each run and writes its pid as soon
 * as it has one (`.pid`). After a kill -9 of dcm it goes on until its last run has ended.
 *
 * Each run is the command under a small wrapper (./wrapper.ts: native/dcm-run, or an sh script
 * where that was not built), the leader of the run's own process group, which writes the run's
 * exit status (`.status`) itself as its last act: the status of a command that ended is never
 * lost, whatever became of dcm and of this launcher. The wrapper also copies the command's stderr
 * into the log (in the order written) and into `.err`, whose last line is the failure's reason
 * (SPEC §7.2). It exits with the command's code, which this launcher passes on: dcm reads
 * `.status` only for a wrapper that did not exit by itself.
 *
 * On a server's store (several hosts) it is also what tells the store how each run ended, since
 * it outlives its worker and a worker on another host may have taken the run over: as each run
 * ends it writes the exit status and the run's facts (run-facts.ts) to `run_end`, keyed by the
 * run's id, trying again while the server cannot be reached. And it stops a run that outlives its
 * state's timeout (`killAfterMs`), which its worker does first while it lives: a frozen or dead
 * worker's runs still end, so the taker's wait for them is bounded.
 *
 * A host woken from a freeze (a paused VM, SIGSTOP: its worker, this launcher and the runs all
 * stopped) longer than its worker's lease may have had its worker taken over meanwhile: the taker
 * may have held the runs as of unknown outcome, and the operator run them again elsewhere. So this
 * launcher keeps a monotonic tick; one that comes later than the lease says it was away that long,
 * and then, first thing and before any run's exit is told or written, it asks the store whether
 * each run's worker (DCM_FENCE's token) still holds its row. A row gone (and the run's step held
 * by no worker of this host, which would be waiting for it) means the run was taken over: it is
 * stopped at once, its whole tree, and its end written with why (`stopped` in its facts, which the
 * taker gives as the run's reason). A row still there: nobody took it over, the runs go on. A
 * store that cannot be reached is asked again on the next ticks. A worker merely killed (its
 * launcher alive, never away) leaves its runs going: their ends are the taker's to take.
 *
 * Protocol, one JSON object per line. dcm → launcher: `{store: {params, host, leaseMs?}}` first
 * when the store is a server's (its parameters, password included: platform/pg-params.ts; the
 * worker's lease), then
 * `{id, file, args, cwd, env, base, reason?, killAfterMs?, graceMs?}` (env is added to the
 * launcher's own environment; the log is `<base>.log`). Launcher → dcm:
 * `{id, pid, start}` once started, then `{id, code, signal, alone?}` when it exited (`alone`: its
 * native wrapper said nothing of the run was left), or `{id, error}`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import readline from 'node:readline';
import { procStartTime } from './procs.js';
import { processesWithEnv } from '../../platform/proc.js';
import { PRIVATE_FILE } from '../../platform/private.js';
import { NATIVE_WRAPPER, wrapped } from './wrapper.js';
import { setLongTimeout } from '../../platform/timers.js';
import { readStatus, type RunStatus } from './files.js';
import { fileFacts, readAll } from './run-facts.js';
import { killRun } from './stop-run.js';
import type { EndStore } from './launch.js';
import { RunStore } from './launcher-store.js';
import { WakeCheck, type Watched } from './wake-check.js';

interface Launch {
  id: number;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  base: string;
  /** The state's `reason` pattern, for the facts written to the store. */
  reason?: string;
  /** The run is stopped (TERM, then KILL after `graceMs`) once it has run this long. */
  killAfterMs?: number;
  graceMs?: number;
}

/** Where runs are claimed and their ends written (a server's store only). */
let store: RunStore | null = null;
/** Run claims and ends not yet written to the store: the launcher waits for them before it exits. */
let writing = 0;

/**
 * The umask dcm was started with, for the commands; this process and the wrappers it starts use
 * 077, so that every file a run leaves beside its log is private whatever the user's umask.
 */
const USER_UMASK = process.umask(0o077).toString(8).padStart(4, '0');

/** The wrapper dcm chose: `--sh` when it found no native/dcm-run or was told to use the sh one. */
const NATIVE = process.argv.includes('--sh') ? null : NATIVE_WRAPPER;

/**
 * The launcher's environment (dcm's without its DCM_* settings), copied once: each run's had
 * been a spread of process.env, every variable looked up through node's environment again.
 */
const BASE_ENV: NodeJS.ProcessEnv = { ...process.env };

let running = 0;
/** Runs past their timeout being stopped (their SIGKILL not sent yet): the launcher waits for them too. */
let stopping = 0;
let dcmGone = false;

/**
 * Answers to dcm not written yet. Starts queued in one turn of the event loop go in one write (a
 * chunk of launches answers as many starts), each write a system call here and a wake-up of dcm.
 * A run's end (its exit, or its error) is written at once, with the starts queued before it: dcm
 * frees the subcloud's slot on it, and a batch of ends held to the turn's end was measured to put
 * off the next runs of the sleep shape's bursts. dcm reads the answers in the order they were
 * queued, a run's start before its end; a run's pid is in its claim file before its start is queued.
 */
let outbox = '';
const send = (msg: object, ended = false) => {
  if (dcmGone) return;
  if (!outbox && !ended) setImmediate(flush);
  outbox += `${JSON.stringify(msg)}\n`;
  if (ended) flush();
};
function flush(): void {
  const text = outbox;
  outbox = '';
  if (text && !dcmGone) process.stdout.write(text);
}
// dcm died: nobody reads any more, and a write would raise EPIPE. The runs go on all the same.
process.stdout.on('error', () => {
  dcmGone = true;
});

function maybeExit(): void {
  if (dcmGone && running === 0 && writing === 0 && stopping === 0) process.exit(0);
}

/**
 * Write a run's end to the store, trying again for up to an hour while the server cannot take it.
 * `status`: the wrapper's, read as the run ended.
 */
async function writeEnd(req: Launch, status: RunStatus | null, code: number | null, signal: string | null, stopped: string | null = null): Promise<void> {
  const runId = req.env.DCM_RUN_ID ?? '';
  // The wrapper's status is the run's own word (its exit code, even when the launcher saw a signal).
  const c = status && 'code' in status ? status.code : code;
  // Why this launcher stopped it, only when it did: a run whose command ended by itself (its
  // status written as the stop came) ended as it says.
  const why = c === null && stopped ? { stopped } : {};
  const facts = JSON.stringify({ ...readAll(fileFacts(req.base, req.reason)), ...why });
  await store!.writeEnd(runId, c, c === null ? signal : null, facts);
}

/** A run going: what a check on waking needs to stop it (wake-check.ts). */
interface Going extends Watched {
  req: Launch;
  pid: number;
  /** Its processes started at or after this (clock ticks since boot). */
  since: number;
}
const going = new Map<number, Going>();

/** The look at the clocks, once the worker told its lease with the store (none on a file). */
let wake: WakeCheck<Going> | null = null;

/** null: nothing to wait for; else settled once a wake's check is answered and this run's stop, if any, is done. */
function wokenFirst(g: Going): Promise<void> | null {
  if (wake) return wake.wokenFirst(g);
  return g.stopped ? g.stopped.done : null;
}

/** The token of the worker that started the run: its DCM_FENCE before the last '.' (workers.ts fenceOf). */
const fenceToken = (req: Launch) => (req.env.DCM_FENCE ?? '').replace(/\.[^.]*$/, '');

/** The worker told its lease: from now on the launcher looks at its clocks. */
function watchClocks(leaseMs: number): void {
  wake = new WakeCheck<Going>(leaseMs, {
    host: store!.host,
    runs: () => [...going.values()],
    takenOver: (tokens, clouds) => store!.takenOver(tokens, clouds),
    // Its whole tree, at once (TERM, KILL after its grace); the launcher stays until it is done.
    stop: (g) => {
      stopping++;
      return killRun(g.pid, g.req.env.DCM_RUN_ID ?? '', g.since, g.req.graceMs ?? 10_000).finally(() => {
        stopping--;
        maybeExit();
      });
    },
    failed: (err) => store!.failed(err),
  });
}

function launch(req: Launch): void {
  // Claim the run: a later dcm that gave it up (it found no trace of it) has claimed it first.
  let claim: number;
  try {
    claim = fs.openSync(`${req.base}.pid`, 'wx', PRIVATE_FILE);
  } catch (err) {
    send({ id: req.id, error: `not started: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? 'given up by a later dcm' : (err as Error).message}` }, true);
    return;
  }
  // Every form of the claim names the run it is for: a file left by an earlier strategy in the
  // same folder is never taken for this run's.
  const runId = req.env.DCM_RUN_ID ?? '';
  const launching = `launching ${process.pid} ${runId}\n`;
  fs.writeSync(claim, launching);
  if (!store) return start(req, claim, launching);
  // On a server, claimed there too (after the file: a run a later dcm here gave up is never
  // claimed there): a worker on another host that took this one's worker over may have given it
  // up first (it found no start), and then it never starts. Tried for a minute while the server
  // cannot be reached; a run that cannot be claimed is not started.
  writing++;
  void store
    .claim(runId)
    .then((refused) => {
      if (!refused) return start(req, claim, launching);
      fs.writeSync(claim, `abandoned ${runId}\n`.padEnd(launching.length), 0);
      fs.closeSync(claim);
      send({ id: req.id, error: refused }, true);
    })
    .finally(() => {
      writing--;
      maybeExit();
    });
}

/** Start the run claimed (`claim`, the `.pid` file open, `launching` written in it). */
function start(req: Launch, claim: number, launching: string): void {
  const runId = req.env.DCM_RUN_ID ?? '';
  let fd: number;
  try {
    fd = openLog(`${req.base}.log`);
  } catch (err) {
    fs.closeSync(claim);
    send({ id: req.id, error: `cannot open the run's log: ${(err as Error).message}` }, true);
    return;
  }
  let child;
  try {
    const [program, argv] = wrapped(NATIVE, req.base, USER_UMASK, req.file, req.args);
    child = spawn(program, argv, {
      detached: true,
      stdio: ['ignore', fd, fd],
      cwd: req.cwd,
      env: { ...BASE_ENV, ...req.env },
    });
  } catch (err) {
    fs.closeSync(claim);
    send({ id: req.id, error: (err as Error).message }, true);
    return;
  } finally {
    fs.closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    fs.closeSync(claim);
    child.once('error', (err) => {
      const missing = !fs.existsSync(req.cwd) ? ` (no such folder: ${req.cwd})` : '';
      send({ id: req.id, error: `${err.message}${missing}` }, true);
    });
    return;
  }
  running++;
  // The pid first, before dcm hears of it: written synchronously, it is there even if dcm dies now.
  fs.writeSync(claim, `${pid} ${process.pid} ${runId}\n`.padEnd(launching.length), 0);
  fs.closeSync(claim);
  // Read once: dcm is told it, and the backstop below stops only what started at or after it.
  const start = procStartTime(pid);
  send({ id: req.id, pid, start });
  // The backstop of the state's timeout: the worker stops the run first while it lives.
  // setLongTimeout: a state's timeout may be past what setTimeout holds (720h).
  // Every process of the run, by its tag as well as its group: one that left the group (setsid,
  // Ansible's workers from 2.18) is stopped too. The launcher stays until the SIGKILL is sent.
  const since = start ?? 0;
  const g: Going = { req, pid, since, token: fenceToken(req), cloud: req.env.DCM_CLOUD ?? '', stopped: null };
  going.set(req.id, g);
  // Fired late after a freeze, it waits for the wake's check: a run stopped for that is not
  // stopped again as timed out.
  const backstop = req.killAfterMs
    ? setLongTimeout(() => {
        const stop = () => {
          if (g.stopped || !going.has(req.id)) return;
          stopping++;
          stopRun(pid, req.env.DCM_RUN_ID, since, 'SIGTERM');
          setLongTimeout(() => {
            stopRun(pid, req.env.DCM_RUN_ID, since, 'SIGKILL');
            stopping--;
            maybeExit();
          }, req.graceMs ?? 10_000);
        };
        const wait = wokenFirst(g);
        if (wait) void wait.then(stop);
        else stop();
      }, req.killAfterMs)
    : null;
  child.once('exit', (code, signal) => {
    // The wrapper wrote the status and exits with the same code; a wrapper ended by a signal (a
    // timeout's kill) wrote none, or wrote it just before the signal came (dcm reads it then).
    backstop?.clear();
    const told = () => {
      going.delete(req.id);
      running--;
      // The wrapper's status: a server is told the run's end from it, and a native wrapper that
      // exited by itself may have said nothing of the run was left. Then dcm looks for no
      // leftovers: a pass over /proc, which was most of its own CPU a run when runs are short.
      const status = store || (NATIVE && code !== null) ? readStatus(req.base, req.env.DCM_RUN_ID ?? '') : null;
      send({ id: req.id, code, signal, ...(status && 'alone' in status ? { alone: true } : {}) }, true);
      if (!store) return maybeExit();
      writing++;
      void writeEnd(req, status, code, signal, g.stopped?.why ?? null).finally(() => {
        writing--;
        maybeExit();
      });
    };
    // Heard as the host wakes: told once the store has said whether its worker was taken over
    // meanwhile (then stopped, and told once nothing of it is left).
    const wait = wokenFirst(g);
    if (wait) void wait.then(told);
    else told();
  });
}

/**
 * The run's log, empty and private. Made new as a rule (under this process's umask 077 it is
 * private from the start); one already there (an earlier strategy's run at the same path) is
 * emptied and made private, which a new one needs no call for.
 */
function openLog(file: string): number {
  try {
    return fs.openSync(file, 'wx', PRIVATE_FILE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const fd = fs.openSync(file, 'w', PRIVATE_FILE);
  try {
    fs.fchmodSync(fd, PRIVATE_FILE); // a log an earlier dcm left readable by others
  } catch {
    // someone else's file we may write to: its mode is not ours to change
  }
  return fd;
}

function stopGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // gone already
  }
}

/** `signal` to the run's group and to every live process carrying its DCM_RUN_ID. */
function stopRun(pgid: number, runId: string | undefined, since: number, signal: NodeJS.Signals): void {
  stopGroup(pgid, signal);
  if (!runId) return;
  for (const p of processesWithEnv('DCM_RUN_ID', new Set([runId]), since).get(runId) ?? []) {
    try {
      process.kill(p, signal);
    } catch {
      // gone already
    }
  }
}

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line) as Launch | { store: EndStore };
  if ('store' in msg) {
    store = new RunStore(msg.store);
    if (msg.store.leaseMs) watchClocks(msg.store.leaseMs);
  } else launch(msg);
});
lines.on('close', () => {
  dcmGone = true;
  maybeExit();
});
