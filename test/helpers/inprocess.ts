/**
 * Run the CLI's `main(argv, io)` inside the test process: the same parse → command → render → exit
 * code path as `bin/dcm.js`, without paying ~200 ms of node start per call. For the large tables of
 * cases; the end-to-end tests still run the built binary for each kind of behaviour.
 */
import { expect } from '@jest/globals';
import { Readable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import type { RunResult } from './cli.js';
import { dirFingerprint, expectErrorLine } from './fleet.js';

function sink(): { isTTY: false; text: string; write: (s: string | Uint8Array) => boolean } {
  const s = {
    isTTY: false as const,
    text: '',
    write(chunk: string | Uint8Array) {
      s.text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      return true;
    },
  };
  return s;
}

/** `dcm ...args` in process. DCM_DB and DCM_DEBUG are ignored, as in the spawned helper. */
export async function run(args: string[]): Promise<RunResult> {
  const saved = { db: process.env.DCM_DB, debug: process.env.DCM_DEBUG };
  delete process.env.DCM_DB;
  delete process.env.DCM_DEBUG;
  const stdout = sink();
  const stderr = sink();
  try {
    // Never the terminal jest may run on (`jest -i`): a prompt would wait for an answer.
    const code = await main(args, { stdout, stderr, stdin: Readable.from([]) } as never);
    return { code, signal: null, stdout: stdout.text, stderr: stderr.text };
  } finally {
    if (saved.db !== undefined) process.env.DCM_DB = saved.db;
    if (saved.debug !== undefined) process.env.DCM_DEBUG = saved.debug;
  }
}

export async function runOk(args: string[]): Promise<RunResult> {
  const r = await run(args);
  if (r.code !== 0) throw new Error(`dcm ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r;
}

/** The in-process twin of fleet.ts's expectRefused. */
export async function expectRefusedInProcess(dir: string, args: string[], code: number, message: string | RegExp): Promise<RunResult> {
  const before = dirFingerprint(dir);
  const r = await run(args);
  expectErrorLine(r, code, message);
  expect(dirFingerprint(dir)).toEqual(before);
  return r;
}
