/**
 * The guide's examples, run as a reader would run them: every ```` ```sh runnable ```` block of a
 * page, in order, in one bash (so a variable or a `cd` of one block holds in the next), under
 * `set -e`, in a temporary folder, with the built dcm on PATH as `dcm`. A block that fails fails
 * the page, naming the block's line. Processes a page leaves behind (an `apply &`, an sshd) are
 * found by a tag in their environment and killed at the end, whatever became of the page.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { processesWithEnv } from '../../src/platform/proc.js';
import { BIN, ROOT } from './cli.js';

/** The info string that marks a block to run: GitHub shows it as `sh`. */
export const RUNNABLE = /^```sh runnable\s*$/;

export interface Block {
  /** `docs/guide/x.md:42`: where the block's fence is. */
  at: string;
  code: string;
}

export function runnableBlocks(file: string): Block[] {
  const rel = path.relative(ROOT, file);
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!RUNNABLE.test(lines[i])) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`${rel}:${i + 1}: a runnable block without its closing fence`);
    blocks.push({ at: `${rel}:${i + 1}`, code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

const TAG = 'DOCS_RUN_TAG';

/** A folder with `dcm` in it: the built bin/dcm.js, run by this node. */
function dcmOnPath(dir: string): string {
  const bin = path.join(dir, '.bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, 'dcm'), `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`, { mode: 0o755 });
  return bin;
}

export interface PageRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The block that was running when the page stopped, when it failed. */
  failedAt: string | null;
  /** How long each block took (wall clock; for the reader of a slow page, never asserted). */
  seconds: { at: string; seconds: number }[];
  /** Processes of the page still alive once it ended (each then killed): a page cleans up after itself. */
  leftovers: number;
}

/**
 * Run `blocks` in `cwd`. `env` adds to a clean environment (no DCM_DB of the test's, no DCM_DEBUG).
 * Killed after `limitMs`.
 */
export async function runBlocks(blocks: Block[], cwd: string, env: Record<string, string> = {}, limitMs = 110_000): Promise<PageRun> {
  const tag = randomUUID();
  const script = ['set -eo pipefail', '__at() { printf "::block %s %s\\n" "$1" "$(date +%s.%N)" >&2; }'];
  for (const b of blocks) script.push(`__at ${JSON.stringify(b.at)}`, b.code);
  script.push('__at end');
  const base = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('DCM_') && k !== 'DCM_CHECK_TURNS') delete base[k];
  const child = spawn('bash', ['-c', script.join('\n')], {
    cwd,
    env: { ...base, PATH: `${dcmOnPath(cwd)}:${process.env.PATH}`, [TAG]: tag, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // Past the limit, the whole page goes: a process that holds its output open (an apply waiting for
  // a resume nobody types) would otherwise keep the page from ever ending.
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killAll(child.pid!, tag);
  }, limitMs);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  // What the page left going: its process group, and what left the group (a daemon) by the tag.
  const left = [...processesWithEnv(TAG, new Set([tag])).values()].flat();
  const leftovers = left.length;
  killAll(child.pid!, tag, left);
  const marks = [...stderr.matchAll(/^::block (\S+) (\S+)$/gm)].map((m) => ({ at: m[1], time: Number(m[2]) }));
  const last = marks[marks.length - 1]?.at ?? null;
  const seconds = marks.slice(0, -1).map((m, i) => ({ at: m.at, seconds: Number((marks[i + 1].time - m.time).toFixed(1)) }));
  if (timedOut) stderr += `\n[test helper: the page was killed after ${limitMs / 1000} s]\n`;
  return { code, stdout, stderr, failedAt: code === 0 ? null : last, seconds, leftovers };
}

/** SIGKILL the page's process group, and every process carrying its tag (a daemon left the group). */
function killAll(pgid: number, tag: string, known: number[] = []): void {
  const pids = [...known, ...[...processesWithEnv(TAG, new Set([tag])).values()].flat()];
  for (const target of [-pgid, ...pids]) {
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/** What a failed page printed from its failing block on: enough to see why, not the whole page. */
export function failure(run: PageRun): string {
  const from = run.failedAt ? run.stderr.lastIndexOf(`::block ${run.failedAt} `) : 0;
  const times = run.seconds.map((b) => `${b.at.split(':')[1]}: ${b.seconds}s`).join(', ');
  return `exit ${run.code} in the block at ${run.failedAt} (seconds per block, by line: ${times})\n--- stderr from there:\n${run.stderr.slice(Math.max(0, from)).slice(-4000)}\n--- stdout (end):\n${run.stdout.slice(-2000)}`;
}
