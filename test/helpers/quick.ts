/**
 * `dcmQuick`: `dcm` (test/helpers/cli.ts) without a process — the built CLI's `main` in a worker
 * thread of the test's own process, called synchronously. For a test's set-up and read-backs: the
 * commands around the one whose behaviour the test is about, which need the same parse, store and
 * output but not a Node start each (0.25 s of CPU; most of the suite's CPU was those starts).
 *
 * What only a process has stays with `dcm` and `dcmSpawn`: an apply (signals, the launcher, its
 * children), a closed pipe, a terminal, the exit code bin/dcm.js settles after a failed write, a
 * working directory of the call's own.
 */
import { afterAll } from '@jest/globals';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { ROOT, dcm, type RunResult } from './cli.js';

/** As long as cli.ts lets a synchronous dcm run: only a hung command ever reaches it. */
const LIMIT_MS = 600_000;

let thread: { worker: Worker; port: MessagePort; state: Int32Array; ended: boolean } | null = null;

function start(): NonNullable<typeof thread> {
  const shared = new SharedArrayBuffer(4);
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(path.join(ROOT, 'test', 'helpers', 'dcm-thread.mjs'), {
    workerData: { shared, port: port2, mainUrl: pathToFileURL(path.join(ROOT, 'dist', 'cli', 'main.js')).href },
    transferList: [port2],
    stdout: false,
    stderr: false,
  });
  // The thread never keeps jest's process alive; it ends with the file (below).
  worker.unref();
  const t = { worker, port: port1, state: new Int32Array(shared), ended: false };
  worker.once('exit', () => (t.ended = true));
  return t;
}

afterAll(async () => {
  if (thread) await thread.worker.terminate();
  thread = null;
});

/** What the thread cannot give a call, or gives it differently: such a call spawns `dcm`. */
const PROCESS_ENV = ['TZ', 'NO_COLOR', 'FORCE_COLOR', 'COLUMNS', 'TERM', 'LANG', 'LC_ALL'];
function needsProcess(args: string[], opts: { input?: string; env?: Record<string, string>; cwd?: string }): boolean {
  return (
    // An apply, an audit or a watch: signals, the launcher, children, redraws of their own.
    args.some((a) => ['apply', 'audit', '--watch', '-w'].includes(a)) ||
    // Standard input is read from descriptor 0 (`subcloud import -`): in the thread, jest's.
    opts.input !== undefined ||
    path.resolve(opts.cwd ?? ROOT) !== process.cwd() ||
    // The time zone and the colours are the process's, settled when it starts.
    Object.keys(opts.env ?? {}).some((k) => PROCESS_ENV.includes(k))
  );
}

/**
 * Run `dcm ...args` in the worker thread and wait for it. The same options as `dcm`; what needs a
 * process (above) spawns one.
 */
export function dcmQuick(args: string[], opts: { input?: string; env?: Record<string, string>; cwd?: string } = {}): RunResult {
  if (needsProcess(args, opts)) return dcm(args, opts);
  try {
    return inThread(args, opts);
  } catch (err) {
    // A read-back whose thread died is asked once more of a fresh thread (reading twice changes
    // nothing), the death shown on the test's output: under a loaded suite the thread died twice
    // in some 4,000 calls, each time at a read-back, in ways it could not yet say.
    if (!(err instanceof ThreadDied) || !readOnly(args)) throw err;
    console.warn(`${err.message}\n(asked again of a fresh thread)`);
    return inThread(args, opts);
  }
}

/** The thread ended, or died, without answering. */
class ThreadDied extends Error {}

/** A command that only reads (a read-back: list, show, status, history): safe to ask twice. */
function readOnly(args: readonly string[]): boolean {
  const valued = ['--db', '-f', '--format', '-c', '--column'];
  const words = args.filter((a, i) => !a.startsWith('-') && !(i > 0 && valued.includes(args[i - 1])));
  return ['list', 'show', 'status', 'history'].includes(words[1] ?? '');
}

function inThread(args: string[], opts: { env?: Record<string, string> }): RunResult {
  // A thread that died since the last call (its exit came between calls) is replaced.
  if (!thread || thread.ended) thread = start();
  Atomics.store(thread.state, 0, 0);
  thread.worker.postMessage({ args, env: opts.env ?? {} });
  if (Atomics.wait(thread.state, 0, 0, LIMIT_MS) === 'timed-out') {
    void thread.worker.terminate();
    thread = null;
    throw new Error(`dcmQuick: dcm ${args.join(' ')} did not end within ${LIMIT_MS / 1000} s`);
  }
  const msg = receiveMessageOnPort(thread.port);
  if (!msg) {
    thread = null;
    throw new ThreadDied(`dcmQuick: the thread ended without answering dcm ${args.join(' ')}`);
  }
  if ('died' in (msg.message as object)) {
    // During a call, or after the last had answered (something it left behind threw).
    const m = msg.message as { died: string; during: string | null };
    thread = null;
    throw new ThreadDied(`dcmQuick: the thread died ${m.during ? `during dcm ${m.during}` : 'after its last call had answered'} (asked: dcm ${args.join(' ')}): ${m.died}`);
  }
  const r = msg.message as { code: number; stdout: string; stderr: string };
  return { code: r.code, signal: null, stdout: r.stdout, stderr: r.stderr };
}

/** dcmQuick, throwing with its stderr unless it exits 0. */
export function dcmQuickOk(args: string[], opts: Parameters<typeof dcmQuick>[1] = {}): RunResult {
  const r = dcmQuick(args, opts);
  if (r.code !== 0) throw new Error(`dcm ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r;
}
