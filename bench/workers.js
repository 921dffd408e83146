#!/usr/bin/env node
/**
 * Several workers on one strategy (issue 17; README "Several hosts"), on a PostgreSQL server:
 *
 *   node bench/workers.js 'postgresql://user@/postgres?host=/run/postgresql' [reps]
 *
 * The address is of a database the user may create databases from (each run gets a fresh copy of
 * a prepared one, `CREATE DATABASE … TEMPLATE`, not timed). Measures, with the built dcm:
 *  - figure 1's work (10,000 subclouds × 5 states, sim latency 0, window 500) with 1, 2 and 4
 *    workers started together, against one apply on a SQLite file: wall time to the last worker's
 *    exit, and commits (all workers') per second;
 *  - a latency-bound run (2,000 subclouds, sim latency 20–60 ms, window 200) with 3 workers: the
 *    makespan from the step history against the ideal (total operation time / window, or the
 *    longest subcloud), as figure 2 computes it for one orchestrator;
 *  - takeover: two workers on two hosts (DCM_HOST), one killed with kill -9 mid-run: from its
 *    lease's expiry (its last heartbeat + the lease) to the first operation started on a subcloud
 *    it held; and the same on one host, where the process being gone is seen without the lease.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { analyseHistory, meanInFlight, parseTime } from './lib/schedule.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DCM = path.join(ROOT, 'bin', 'dcm.js');
const admin = process.argv[2];
const reps = Number(process.argv[3] ?? 3);
if (!admin) {
  console.error('usage: node bench/workers.js POSTGRESQL_URL [reps]');
  process.exit(2);
}
// BENCH_ONLY=fig1,lat,take runs only those parts. BENCH_JSON=FILE also writes the measurements
// there (`npm run bench` reads them: bench/pg-figures.js).
const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null;
const measured = {};
const wanted = (part) => !only || only.has(part);
const { PgClient } = await import(path.join(ROOT, 'dist', 'platform', 'pg-client.js'));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-bench-workers-'));
// Not `new URL`: libpq's socket form (`postgresql://user@/db?host=/dir`) has no host for it.
const urlOf = (name) => admin.replace(/^(postgres(?:ql)?:\/\/[^/?#]*)(\/[^?#]*)?/, `$1/${name}`);

async function sqlOn(url, text, values = []) {
  const pg = await PgClient.connect(url);
  try {
    return (await pg.query(text, values)).rows;
  } finally {
    pg.close();
  }
}

function dcmSetup(db, args) {
  const r = spawnSync(process.execPath, [DCM, '--db', db, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`dcm ${args.slice(0, 3).join(' ')}: ${r.stderr}`);
}

async function fresh(name, template) {
  await sqlOn(admin, `DROP DATABASE IF EXISTS ${name}`);
  await sqlOn(admin, `CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  return urlOf(name);
}

/** A database holding `n` subclouds and a patch strategy made with `args`. */
async function prepare(name, n, args) {
  const db = await fresh(name);
  const names = Array.from({ length: n }, (_, i) => `subcloud${i + 1}`);
  for (let i = 0; i < n; i += 2000) dcmSetup(db, ['subcloud', 'add', ...names.slice(i, i + 2000)]);
  dcmSetup(db, ['strategy', 'create', '--type', 'patch', ...args]);
  return name;
}

/** Start `count` workers at once; resolves with the wall time to the last exit and their commits. */
function workers(db, count, extraArgs = [], envOf = () => ({})) {
  const t0 = process.hrtime.bigint();
  const procs = [];
  for (let i = 0; i < count; i++) {
    const counters = path.join(tmp, `counters-${i}.json`);
    fs.rmSync(counters, { force: true });
    const env = { ...process.env, DCM_TEST_HOOKS: '1', DCM_COUNTERS: counters, ...envOf(i) };
    delete env.DCM_DB;
    const child = spawn(process.execPath, [DCM, '--db', db, 'strategy', 'apply', '-q', ...extraArgs], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    procs.push({
      child,
      counters,
      done: new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, err, ms: Number(process.hrtime.bigint() - t0) / 1e6 }))),
    });
  }
  return {
    procs,
    all: Promise.all(procs.map((p) => p.done)).then((ends) => {
      const commits = procs.reduce((n, p) => n + (fs.existsSync(p.counters) ? JSON.parse(fs.readFileSync(p.counters, 'utf8')).commits : 0), 0);
      return { ends, ms: Math.max(...ends.map((e) => e.ms)), commits };
    }),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const span = (xs, d = 2) => `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;

async function completeCount(db) {
  return Number((await sqlOn(db, `SELECT count(*) AS n FROM strategy_step WHERE state = 'complete'`))[0].n);
}

// --- Figure 1's work with 1, 2, 4 workers, and SQLite with one ---
if (wanted('fig1')) {
const FIG1 = await prepare('dcmbench_fig1', 10_000, ['--sim-latency', '0', '--max-parallel-subclouds', '500']);
const sqliteFile = path.join(tmp, 'fig1.db');
dcmSetup(sqliteFile, ['subcloud', 'add', ...Array.from({ length: 10_000 }, (_, i) => `subcloud${i + 1}`)]);
dcmSetup(sqliteFile, ['strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--max-parallel-subclouds', '500']);
const results = { sqlite: [], 1: [], 2: [], 4: [] };
for (let r = 0; r < reps; r++) {
  const work = path.join(tmp, 'work.db');
  for (const s of ['', '-wal', '-shm', '.sites', '.sites-wal', '.sites-shm']) fs.rmSync(work + s, { force: true });
  fs.copyFileSync(sqliteFile, work);
  const one = await workers(work, 1).all;
  results.sqlite.push(one);
  for (const n of [1, 2, 4]) {
    const db = await fresh('dcmbench_work', FIG1);
    const res = await workers(db, n).all;
    if ((await completeCount(db)) !== 10_000 || res.ends.some((e) => e.code !== 0)) throw new Error(`${n} workers: ${JSON.stringify(res.ends)}`);
    results[n].push(res);
  }
  console.log(`figure 1 round ${r + 1}: sqlite ${(one.ms / 1000).toFixed(1)} s; pg ${[1, 2, 4].map((n) => `${n}w ${(results[n][r].ms / 1000).toFixed(1)} s`).join(', ')}`);
}
const base = results.sqlite.map((x) => x.ms);
measured.fig1 = Object.fromEntries(Object.entries(results).map(([k, xs]) => [k, xs.map((x) => ({ ms: x.ms, commits: x.commits }))]));
console.log(`\nfigure 1's work (10,000 × 5, latency 0, window 500), ${reps} rounds, median (min–max):`);
console.log(`  SQLite, 1 orchestrator: ${span(base.map((m) => m / 1000), 1)} s, ${span(results.sqlite.map((x) => x.commits / (x.ms / 1000)), 0)} commits/s`);
for (const n of [1, 2, 4]) {
  const xs = results[n];
  console.log(
    `  PostgreSQL, ${n} worker(s): ${span(xs.map((x) => x.ms / 1000), 1)} s, ${span(xs.map((x, i) => x.ms / base[i]), 2)}× SQLite, ` +
      `${span(xs.map((x) => x.commits), 0)} commits, ${span(xs.map((x) => x.commits / (x.ms / 1000)), 0)} commits/s`,
  );
}

}

// --- Latency-bound: 3 workers against the ideal ---
if (wanted('lat')) {
const LAT = await prepare('dcmbench_lat', 2_000, ['--sim-latency', '20ms..60ms', '--max-parallel-subclouds', '200', '--sim-seed', '1']);
const ratios = [];
const spans = [];
for (let r = 0; r < reps; r++) {
  const db = await fresh('dcmbench_work', LAT);
  const res = await workers(db, Number(process.env.BENCH_LAT_WORKERS ?? 3)).all;
  if ((await completeCount(db)) !== 2_000 || res.ends.some((e) => e.code !== 0)) throw new Error(`latency-bound: ${JSON.stringify(res.ends)}`);
  const rows = await sqlOn(db, 'SELECT step_id AS "stepId", state, started_at, finished_at FROM step_history ORDER BY id');
  const a = analyseHistory(rows, 200);
  ratios.push(a.makespan / a.ideal);
  spans.push({ makespan: a.makespan, ideal: a.ideal });
  console.log(
    `latency-bound round ${r + 1}: makespan ${(a.makespan / 1000).toFixed(3)} s, ideal ${(a.ideal / 1000).toFixed(3)} s, ` +
      `ratio ${(a.makespan / a.ideal).toFixed(3)}, mean in flight ${meanInFlight(rows).toFixed(0)} of 200, ${res.commits} commits`,
  );
}
console.log(`\nlatency-bound (2,000, 20–60 ms, window 200), ${process.env.BENCH_LAT_WORKERS ?? 3} worker(s): makespan / ideal ${span(ratios, 3)}`);
measured.lat = spans;

}

// --- Takeover after kill -9 ---
if (wanted('take')) {
const TAKE = await prepare('dcmbench_take', 400, ['--sim-latency', '200ms..400ms', '--max-parallel-subclouds', '40']);
for (const where of ['two hosts', 'one host']) {
  const delays = [];
  for (let r = 0; r < reps; r++) {
    const db = await fresh('dcmbench_work', TAKE);
    const w = workers(db, 2, ['--lease', '5s'], (i) => ({ DCM_HOST: where === 'two hosts' ? `bench-host-${i}` : 'bench-host' }));
    // Both hold subclouds: then the first one goes.
    for (;;) {
      await new Promise((res) => setTimeout(res, 100));
      const held = await sqlOn(db, `SELECT count(DISTINCT owner) AS n FROM strategy_step WHERE owner IS NOT NULL AND state NOT IN ('initial', 'complete')`);
      if (Number(held[0].n) === 2) break;
    }
    const victim = (await sqlOn(db, 'SELECT id, pid, heartbeat_ms, lease_ms FROM apply_worker ORDER BY id LIMIT 1'))[0];
    const held = (await sqlOn(db, `SELECT id FROM strategy_step WHERE owner = $1 AND state NOT IN ('initial', 'complete', 'failed', 'aborted')`, [victim.id])).map((x) => Number(x.id));
    const killedMs = Date.now();
    process.kill(Number(victim.pid), 'SIGKILL');
    const res = await w.all;
    if ((await completeCount(db)) !== 400) throw new Error(`takeover: ${JSON.stringify(res.ends)}`);
    // The victim's last heartbeat as it was when it died (read just before the kill: it beats no more).
    const last = await sqlOn(db, `SELECT heartbeat_ms FROM apply_worker WHERE id = $1`, [victim.id]);
    const beatMs = Number(victim.heartbeat_ms);
    const expiry = where === 'two hosts' ? beatMs + Number(victim.lease_ms) : killedMs;
    const starts = await sqlOn(db, `SELECT min(started_at) AS t FROM step_history WHERE step_id = ANY($1::bigint[]) AND started_at > $2`, [
      held,
      new Date(killedMs).toISOString().replace('T', ' ').replace('Z', ''),
    ]);
    const first = parseTime(starts[0].t);
    delays.push((first - expiry) / 1000);
    console.log(`takeover (${where}) round ${r + 1}: ${held.length} subclouds held; first claim ${((first - expiry) / 1000).toFixed(2)} s after ${where === 'two hosts' ? 'its lease ran out' : 'the kill'}${last.length ? ' (its row was still there!)' : ''}`);
  }
  console.log(`takeover, ${where}: ${span(delays, 2)} s from ${where === 'two hosts' ? 'lease expiry (5 s lease, heartbeat every 1.67 s)' : 'the kill (seen by the pid)'} to the first claim`);
}
}
if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, `${JSON.stringify(measured)}\n`);
for (const name of ['dcmbench_work', 'dcmbench_fig1', 'dcmbench_lat', 'dcmbench_take']) await sqlOn(admin, `DROP DATABASE IF EXISTS ${name}`);
fs.rmSync(tmp, { recursive: true, force: true });
