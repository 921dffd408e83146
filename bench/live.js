#!/usr/bin/env node
/**
 * `node bench/live.js` (after `npm run build`): the two figures of issue 10.
 *
 * 1. The cost of the live view: a 10,000-subcloud zero-latency apply (window 500) with the view on
 *    a real terminal (tmux) against the same apply with -q, both run inside the same tmux pane,
 *    alternating, after one warm-up of each. Target: median ratio ≤ 1.1.
 * 2. The ETA's error: 2,000 subclouds in two stages (a canary group of 20, window 5, then 1,980,
 *    window 100), sim latency 20..200 ms, several seeds. Apply runs off a terminal with a progress
 *    line every 250 ms; at the first line past 25 %, 50 % and 75 % done, the predicted end (the
 *    line's time + its ETA) is compared with the actual end (the last step's finished_at).
 *
 * Prints a JSON summary and the Markdown rows for BENCHMARKS.md. LIVE_QUICK=1: fewer runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { copyDb, dcmSetup, preparedStrategy, removeDb, writeFleetCsv } from './lib/fleet.js';
import { parseTime } from './lib/schedule.js';
import { median } from './lib/stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const ctx = { dcm: path.join(root, 'bin', 'dcm.js') };
const quick = process.env.LIVE_QUICK === '1';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-live-bench-'));
const socket = `dcm-live-bench-${process.pid}`;
const log = (line) => process.stderr.write(`${line}\n`);

function tmux(...args) {
  const r = spawnSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.error?.message ?? r.stderr}`);
  return r.stdout;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Run `args` as dcm inside the tmux pane, under GNU time (its report goes to a file; dcm's stderr
 * stays on the terminal): the wall time and the CPU time (user + system) of the dcm process, ms.
 * The CPU time is the steadier figure on a shared machine: others' load stretches wall time only.
 */
async function inTerminal(args) {
  const out = path.join(tmp, `t-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  const cmd = [process.execPath, ctx.dcm, ...args].map((a) => `'${a}'`).join(' ');
  tmux(
    'send-keys', '-t', 'bench',
    `clear; env -u NO_COLOR TERM=xterm-256color /usr/bin/time -o '${out}.t' -f '%e %U %S' ${cmd} >/dev/null; mv '${out}.t' '${out}'`,
    'Enter',
  );
  while (!fs.existsSync(out)) await sleep(50);
  const [wall, user, sys] = fs.readFileSync(out, 'utf8').trim().split(/\s+/).map(Number);
  fs.rmSync(out);
  return { wall: wall * 1000, cpu: (user + sys) * 1000 };
}

async function viewCost() {
  const runs = quick ? 2 : 7;
  const master = preparedStrategy(ctx, tmp, 'view', 10_000, ['--max-parallel-subclouds', '500', '--sim-latency', '0']);
  const db = path.join(tmp, 'view-run.db');
  tmux('new-session', '-d', '-s', 'bench', '-x', '120', '-y', '40', 'bash --norc --noprofile');
  const samples = { view: [], quiet: [], viewCpu: [], quietCpu: [], load: [] };
  try {
    for (let i = 0; i <= runs; i++) {
      for (const mode of i % 2 ? ['view', 'quiet'] : ['quiet', 'view']) {
        copyDb(master, db);
        const { wall: ms, cpu } = await inTerminal(['--db', db, ...(mode === 'quiet' ? ['-q'] : []), 'strategy', 'apply']);
        const state = new Database(db, { readonly: true }).prepare('SELECT state FROM strategy').pluck().get();
        if (state !== 'complete') throw new Error(`apply (${mode}) ended ${state}`);
        if (i > 0) {
          // run 0 is the warm-up
          samples[mode].push(ms);
          samples[`${mode}Cpu`].push(cpu);
          samples.load.push(os.loadavg()[0]);
        }
        log(`view cost: run ${i}${i ? '' : ' (warm-up)'} ${mode} ${ms.toFixed(0)} ms wall, ${cpu.toFixed(0)} ms CPU`);
      }
    }
  } finally {
    spawnSync('tmux', ['-L', socket, 'kill-server']);
    removeDb(db);
  }
  const ratios = samples.view.map((v, i) => v / samples.quiet[i]);
  const cpuRatios = samples.viewCpu.map((v, i) => v / samples.quietCpu[i]);
  return {
    runs,
    viewMs: median(samples.view),
    quietMs: median(samples.quiet),
    ratio: median(samples.view) / median(samples.quiet),
    ratioRange: [Math.min(...ratios), Math.max(...ratios)],
    viewCpuMs: median(samples.viewCpu),
    quietCpuMs: median(samples.quietCpu),
    cpuRatio: median(samples.viewCpu) / median(samples.quietCpu),
    cpuRatioRange: [Math.min(...cpuRatios), Math.max(...cpuRatios)],
    loadAverage: [Math.min(...samples.load), Math.max(...samples.load)],
    samples,
  };
}

/** `ETA 3m05s` / `12s` / `8.1s` / `850ms` back to ms. */
function parseSpan(text) {
  let m = /^(\d+)h(\d\d)m$/.exec(text);
  if (m) return (Number(m[1]) * 60 + Number(m[2])) * 60_000;
  m = /^(\d+)m(\d\d)s$/.exec(text);
  if (m) return (Number(m[1]) * 60 + Number(m[2])) * 1000;
  m = /^([\d.]+)(ms|s)$/.exec(text);
  if (m) return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
  return null;
}

function etaRun(seed) {
  const db = path.join(tmp, `eta-${seed}.db`);
  removeDb(db);
  const csv = writeFleetCsv(path.join(tmp, 'eta.csv'), 2000);
  dcmSetup(ctx, ['--db', db, 'subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '5']);
  dcmSetup(ctx, ['--db', db, 'subcloud-group', 'add', '--name', 'fleet', '--max_parallel_subclouds', '100']);
  dcmSetup(ctx, ['--db', db, 'subcloud', 'import', csv]);
  const all = Array.from({ length: 2000 }, (_, i) => `subcloud${i + 1}`);
  dcmSetup(ctx, ['--db', db, 'subcloud', 'update', ...all.slice(0, 20), '--group', 'canary']);
  dcmSetup(ctx, ['--db', db, 'subcloud', 'update', ...all.slice(20), '--group', 'fleet']);
  dcmSetup(ctx, ['--db', db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '20ms..200ms', '--sim-seed', String(seed)]);
  const r = spawnSync(process.execPath, [ctx.dcm, '--db', db, 'strategy', 'apply', '--progress-interval', '250ms'], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`apply exited ${r.status}: ${r.stderr.slice(-500)}`);
  const d = new Database(db, { readonly: true });
  const first = parseTime(d.prepare('SELECT min(started_at) FROM strategy_step').pluck().get());
  const end = parseTime(d.prepare('SELECT max(finished_at) FROM strategy_step').pluck().get());
  d.close();
  removeDb(db);
  const lines = r.stderr
    .split('\n')
    .map((l) => /^(\S+ \S+) progress: .*?: (\d+)\/(\d+) done .* ETA (\S+)/.exec(l))
    .filter(Boolean)
    .map((m) => ({ at: parseTime(m[1]), done: Number(m[2]), total: Number(m[3]), eta: parseSpan(m[4]) }));
  const out = { seed, durationMs: end - first, points: {} };
  for (const f of [0.25, 0.5, 0.75]) {
    const l = lines.find((x) => x.done >= f * x.total && x.eta !== null);
    if (!l) continue;
    const predicted = l.at + l.eta;
    const left = end - l.at;
    out.points[f] = { at: l.at - first, leftMs: left, etaMs: l.eta, errorMs: predicted - end, errorPct: ((predicted - end) / left) * 100 };
  }
  return out;
}

async function main() {
  spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'ignore' });
  if (spawnSync('tmux', ['-V']).status !== 0) throw new Error('tmux is needed: apt-get install -y tmux');
  const only = process.argv[2]; // 'eta' or 'view': that figure alone
  const seeds = quick ? [1] : [1, 2, 3, 4, 5];
  const eta = [];
  for (const s of only === 'view' ? [] : seeds) {
    eta.push(etaRun(s));
    log(`eta: seed ${s}: ${JSON.stringify(eta.at(-1).points)}`);
  }
  const view = only === 'eta' ? null : await viewCost();
  const results = { when: new Date().toISOString(), machine: `${os.cpus()[0]?.model.trim()}, ${os.cpus().length} cores`, view, eta };
  // A run of one figure keeps the other's last results.
  const file = path.join(here, 'live-results.json');
  const before = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  if (only === 'eta') results.view = before.view ?? null;
  if (only === 'view') results.eta = before.eta ?? [];
  fs.writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
  const pct = (f) => {
    const e = eta.map((r) => r.points[f]).filter(Boolean);
    if (e.length === 0) return null;
    const abs = e.map((p) => Math.abs(p.errorPct));
    return `${median(e.map((p) => p.errorPct)).toFixed(1)} % (|error| median ${median(abs).toFixed(1)} %, max ${Math.max(...abs).toFixed(1)} %; ${median(e.map((p) => p.errorMs / 1000)).toFixed(2)} s)`;
  };
  console.log(JSON.stringify({ view: view && { ...view, samples: undefined }, eta25: pct(0.25), eta50: pct(0.5), eta75: pct(0.75) }, null, 2));
  fs.rmSync(tmp, { recursive: true, force: true });
}

main().catch((err) => {
  spawnSync('tmux', ['-L', socket, 'kill-server']);
  fs.rmSync(tmp, { recursive: true, force: true });
  console.error(err);
  process.exit(1);
});
