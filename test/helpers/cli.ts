/**
 * End-to-end helpers: run the built `bin/dcm.js` as a child process against temporary files.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshPgDatabase, pgTestUrl } from './pg-databases.js';
import { defaultLogDir } from '../../src/domain/logs.js';
import { notePgDatabase } from './db.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'bin', 'dcm.js');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * A fresh temporary directory, removed by `cleanup()`, and where the test's database is: a file in
 * it, or in the PostgreSQL pass (jest.pg.config.js) a database of its own on the pass's server.
 */
export function tempDir(prefix = 'dcm-test-'): { dir: string; db: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const removeDir = () => fs.rmSync(dir, { recursive: true, force: true });
  if (!pgTestUrl()) return { dir, db: path.join(dir, 'dcm.db'), cleanup: removeDir };
  const pg = freshPgDatabase();
  notePgDatabase(dir, pg.url);
  return {
    dir,
    db: pg.url,
    cleanup: () => {
      removeDir();
      // The exec driver's default log folder for a server's database: in the folder dcm ran in.
      fs.rmSync(path.resolve(ROOT, defaultLogDir(pg.url)), { recursive: true, force: true });
      pg.drop();
    },
  };
}

/**
 * How long one synchronous dcm may run before it is killed: far past any test's own time (jest's
 * 120 s), so it ends only a hung command. A synchronous wait holds jest's event loop, and jest's
 * timeout cannot end it: without this a hung apply would hold the whole suite until CI's end.
 */
const SYNC_LIMIT_MS = 600_000;

/** Run dcm synchronously. `env` is added to a clean copy of the environment (no DCM_DB). */
export function dcm(args: string[], opts: { input?: string; env?: Record<string, string>; cwd?: string } = {}): RunResult {
  const env = { ...process.env, ...opts.env };
  delete env.DCM_DEBUG;
  if (!opts.env?.DCM_DB) delete env.DCM_DB;
  const r = spawnSync(process.execPath, [BIN, ...args], {
    input: opts.input,
    env,
    cwd: opts.cwd ?? ROOT,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: SYNC_LIMIT_MS,
    killSignal: 'SIGKILL',
  });
  const stderr = r.error && (r.error as NodeJS.ErrnoException).code === 'ETIMEDOUT' ? `${r.stderr}\n[test helper: killed after ${SYNC_LIMIT_MS / 1000} s]\n` : r.stderr;
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr };
}

/** Run dcm and throw with its stderr unless it exits 0. */
export function dcmOk(args: string[], opts: Parameters<typeof dcm>[1] = {}): RunResult {
  const r = dcm(args, opts);
  if (r.code !== 0) throw new Error(`dcm ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r;
}

/** Start dcm in the background; collects output. */
export function dcmSpawn(args: string[], env: Record<string, string> = {}, opts: { detached?: boolean; stderrFile?: string } = {}): {
  child: ChildProcess;
  done: Promise<RunResult>;
  stderr: () => string;
  stdout: () => string;
} {
  const e = { ...process.env, ...env };
  delete e.DCM_DB;
  // detached: its own process group, so that a signal dcm sends to its group never reaches the test.
  const child = spawn(process.execPath, [BIN, ...args], { env: e, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    // A copy as it comes, for a process of the test that waits on what dcm has said.
    if (opts.stderrFile) fs.appendFileSync(opts.stderrFile, d);
  });
  const done = new Promise<RunResult>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done, stderr: () => stderr, stdout: () => stdout };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll `check` until it returns true or `timeoutMs` passes. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 30_000, everyMs = 20): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!await check()) {
    if (Date.now() > end) throw new Error('waitFor: timed out');
    await sleep(everyMs);
  }
}
