#!/usr/bin/env node
/**
 * `npm run bench` (after the build): the five figures of issue 4, each a ratio against a baseline
 * measured in the same run. Writes bench/results.json, rewrites the generated block of
 * BENCHMARKS.md and prints the table.
 *
 * BENCH_QUICK=1 runs every figure once (to try the bench out; the figures are then not worth much).
 * BENCH_MILLION=1 adds figure 7m: a 1,000,000-subcloud import, create and apply (minutes).
 * BENCH_ONLY=7,8 runs only the figures whose ids start with one of these.
 * BENCH_PG_URL=postgresql://… adds figure 10: several workers on that server (bench/pg-figures.js).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { killRunning, rssMethod } from './lib/proc.js';
import { met, table, updateBenchmarksMd } from './lib/report.js';
import { overheadAndMemory, readLatency, scale, scheduling } from './figures.js';
import { execOverhead } from './exec.js';
import { controlLatency, million, stopLatency, windowMemory } from './control.js';
import { SEVERAL_WORKERS_IDS, severalWorkers } from './pg-figures.js';

const started = Date.now();
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const require = createRequire(import.meta.url);
const ORDER = ['1', '2', '2m', '3', '3c', '3h', '4a', '4b', '5', '6', '6x', '6p', '7w', '7W', '7m-import', '7m-create', '7m-apply', '8-pause', '8-resume', '8-update', '9-abort', '9-removed', '9-changed', '10-1', '10-2', '10-4', '10-lat'];

const quick = process.env.BENCH_QUICK === '1';
const reps = quick ? { apply: 1, schedule: 1, read: 2, scale: 1, exec: 1, workers: 1 } : { apply: 7, schedule: 5, read: 15, scale: 7, exec: 3, workers: 3 };

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-bench-'));
const cleanup = () => fs.rmSync(tmp, { recursive: true, force: true });
process.on('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping\n`);
    killRunning();
    cleanup();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}

const log = (line) => process.stderr.write(`${line}\n`);

function git(args) {
  const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

function machine() {
  const mem = new Database(':memory:');
  const sqlite = mem.prepare('select sqlite_version()').pluck().get();
  mem.close();
  const cli = spawnSync('sqlite3', ['--version'], { encoding: 'utf8' });
  const commit = git(['rev-parse', '--short', 'HEAD']);
  return {
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    cores: os.cpus().length,
    memoryGiB: Number((os.totalmem() / 1024 ** 3).toFixed(1)),
    loadAverage: os.loadavg().map((x) => Number(x.toFixed(2))),
    node: process.version,
    sqlite,
    betterSqlite3: require('better-sqlite3/package.json').version,
    sqlite3Cli: cli.status === 0 ? cli.stdout.trim().split(' ')[0] : null,
    dcm: JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version,
    commit,
    dirty: commit ? Boolean(git(['status', '--porcelain', '--untracked-files=no'])) : null,
    rssMethod: rssMethod(),
  };
}

async function main() {
  const dcm = path.join(root, 'bin', 'dcm.js');
  if (!fs.existsSync(path.join(root, 'dist', 'cli', 'main.js'))) {
    throw new Error('dcm is not built: run `npm run bench` (it builds first) or `npm run build`');
  }
  const info = machine();
  log(`bench: ${info.cpu}, ${info.cores} cores, Node ${info.node}, SQLite ${info.sqlite}${quick ? ' (BENCH_QUICK: one run each)' : ''}`);
  const dependencies = Object.keys(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).dependencies ?? {});
  const ctx = { root, dcm, tmp, reps, log, dependencies, rssMethod: info.rssMethod, appliedDb: path.join(tmp, 'applied10k.db') };

  const rows = [];
  const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : null;
  const figures = [
    [overheadAndMemory, [['1', 'Orchestration overhead'], ['5', 'Memory']]],
    [scheduling, [['2', 'Scheduling efficiency']]],
    [readLatency, [['3', 'Read latency'], ['3h', 'Start-up']]],
    [scale, [['4a', 'Scale: import'], ['4b', 'Scale: create']]],
    [execOverhead, [['6', 'Exec driver overhead'], ['6w', 'Exec driver, native wrapper vs sh wrapper'], ['6x', 'Exec driver vs xargs -P'], ['6g', 'Exec driver vs GNU parallel'], ['6p', 'Exec driver, per run'], ['6s', 'Exec driver, sleep 0.2 makespan'], ['6sx', 'sleep 0.2 vs xargs -P'], ['6sg', 'sleep 0.2 vs GNU parallel']]],
    [windowMemory, [['7w', 'Memory follows the window (10,000)'], ['7W', 'Memory follows the window (100,000)']]],
    [controlLatency, [['8-pause', 'Noticed after pause'], ['8-resume', 'Noticed after resume'], ['8-update', 'Noticed after update']]],
    [stopLatency, [['9-abort', 'Noticed after abort'], ['9-removed', 'Exit after the file removed'], ['9-changed', 'Exit after a step changed behind it']]],
    // Several workers on a server (BENCH_PG_URL): skipped without one.
    [severalWorkers, SEVERAL_WORKERS_IDS],
  ];
  // A million subclouds takes minutes: only when asked for.
  if (process.env.BENCH_MILLION === '1') {
    figures.push([million, [['7m-import', '1,000,000 subclouds: import'], ['7m-create', '1,000,000 subclouds: create'], ['7m-apply', '1,000,000 subclouds: apply']]]);
  }
  let failures = 0;
  for (const [fn, ids] of figures) {
    if (only && !ids.some(([id]) => only.some((o) => id.startsWith(o)))) continue;
    try {
      rows.push(...(await fn(ctx)));
    } catch (err) {
      failures++;
      log(`bench: ${fn.name} failed: ${err.message}`);
      for (const [id, figure] of ids) rows.push({ id, figure, error: err.message.split('\n')[0], target: null });
    }
  }
  rows.sort((a, b) => ORDER.indexOf(a.id) - ORDER.indexOf(b.id));

  const results = {
    command: 'npm run bench',
    date: new Date(started).toISOString(),
    durationSeconds: Number((process.uptime() + buildSeconds()).toFixed(1)),
    quick,
    repetitions: reps,
    machine: info,
    rows: rows.map((r) => ({ ...r, met: met(r) })),
  };
  // A partial run (BENCH_ONLY) leaves the full results and BENCHMARKS.md as they are.
  const out = only ? `results-${only.join('-')}.json` : 'results.json';
  fs.writeFileSync(path.join(here, out), JSON.stringify(results, null, 2) + '\n');
  if (!only) updateBenchmarksMd(path.join(root, 'BENCHMARKS.md'), results);

  process.stdout.write(`\n${table(rows)}\n\n`);
  const missed = rows.filter((r) => met(r) === false).map((r) => r.id);
  process.stdout.write(
    `bench: ${(results.durationSeconds / 60).toFixed(1)} min; targets missed: ${missed.length ? missed.map((id) => `#${id}`).join(', ') : 'none'}; ` +
      `wrote bench/${out}${only ? '' : ' and BENCHMARKS.md'}\n`,
  );
  return failures ? 1 : 0;
}

/**
 * `npm run bench` builds before this script starts: when the parent is npm's shell running
 * `npm run build && node bench/run.js`, the time since it started (from /proc) counts in the total.
 */
function buildSeconds() {
  try {
    const cmdline = fs.readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8');
    if (!cmdline.includes('npm run build') || !cmdline.includes('bench/run.js')) return 0;
    const stat = fs.readFileSync(`/proc/${process.ppid}/stat`, 'utf8');
    const parentStartTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const selfStat = fs.readFileSync('/proc/self/stat', 'utf8');
    const selfStartTicks = Number(selfStat.slice(selfStat.lastIndexOf(')') + 2).split(' ')[19]);
    const hz = 100; // USER_HZ on Linux
    const s = (selfStartTicks - parentStartTicks) / hz;
    return s > 0 && s < 3600 ? s : 0;
  } catch {
    return 0;
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    log(`bench: ${err.stack ?? err}`);
    process.exitCode = 1;
  },
);
