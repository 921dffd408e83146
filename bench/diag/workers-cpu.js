#!/usr/bin/env node
/**
 * Diagnostic, not a figure: figure 1's work (10,000 subclouds × 5 states, sim latency 0, window
 * 500) on a local PostgreSQL server with each count of workers given, and for each run the CPU of
 * every worker (user, system), its cost counters (DCM_COUNTERS: commits, transitions, statements,
 * round trips), and the server's CPU (its postmaster's and every ended backend's, read from /proc:
 * the server must run on this machine):
 *
 *   node bench/diag/workers-cpu.js 'postgresql://user@/postgres?host=/run/postgresql' 1 2 4
 *
 * What it showed (issue 51, BENCHMARKS figure 10): a worker makes about as many commits with a
 * quarter of the work as with half, so four workers cost the server and themselves more than two.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DCM = path.join(ROOT, 'bin', 'dcm.js');
const [admin, ...counts] = process.argv.slice(2);
if (!admin || counts.length === 0) {
  console.error('usage: node bench/diag/workers-cpu.js POSTGRESQL_URL WORKERS...');
  process.exit(2);
}
const { PgClient } = await import(path.join(ROOT, 'dist', 'platform', 'pg-client.js'));
const urlOf = (name) => admin.replace(/^(postgres(?:ql)?:\/\/[^/?#]*)(\/[^?#]*)?/, `$1/${name}`);
async function sqlOn(url, text) {
  const pg = await PgClient.connect(url);
  try {
    return (await pg.query(text, [])).rows;
  } finally {
    pg.close();
  }
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-diag-workers-'));
function dcmSetup(db, args) {
  const r = spawnSync(process.execPath, [DCM, '--db', db, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(r.stderr);
}
// The postmaster: the parent of this session's backend. Its children's CPU counts each backend once it has ended.
const backend = Number((await sqlOn(admin, 'SELECT pg_backend_pid() AS pid'))[0].pid);
const statOf = (pid) => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
const postmaster = Number(statOf(backend)[1]);
const ticks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100;
const serverCpu = () => statOf(postmaster).slice(11, 15).reduce((s, x) => s + Number(x), 0) / ticks;

await sqlOn(admin, 'DROP DATABASE IF EXISTS dcmdiag_tpl');
await sqlOn(admin, 'CREATE DATABASE dcmdiag_tpl');
const names = Array.from({ length: 10_000 }, (_, i) => `subcloud${i + 1}`);
for (let i = 0; i < names.length; i += 2000) dcmSetup(urlOf('dcmdiag_tpl'), ['subcloud', 'add', ...names.slice(i, i + 2000)]);
dcmSetup(urlOf('dcmdiag_tpl'), ['strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--max-parallel-subclouds', '500']);

for (const n of counts.map(Number)) {
  await sqlOn(admin, 'DROP DATABASE IF EXISTS dcmdiag_work');
  await sqlOn(admin, 'CREATE DATABASE dcmdiag_work TEMPLATE dcmdiag_tpl');
  const db = urlOf('dcmdiag_work');
  const cpu0 = serverCpu();
  const t0 = performance.now();
  const runs = Array.from({ length: n }, (_, i) => {
    const counters = path.join(tmp, `counters-${n}-${i}.json`);
    const env = { ...process.env, DCM_TEST_HOOKS: '1', DCM_COUNTERS: counters };
    delete env.DCM_DB;
    const child = spawn('/usr/bin/time', ['-f', '%U %S', process.execPath, DCM, '--db', db, 'strategy', 'apply', '-q'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    return new Promise((resolve) => child.on('close', (code) => resolve({ code, err, s: (performance.now() - t0) / 1000, counters })));
  });
  const ends = await Promise.all(runs);
  console.log(`${n} worker(s): ${((performance.now() - t0) / 1000).toFixed(2)} s, the server's CPU ${(serverCpu() - cpu0).toFixed(2)} s`);
  for (const e of ends) {
    const c = JSON.parse(fs.readFileSync(e.counters, 'utf8'));
    const [user, sys] = e.err.trim().split('\n').pop().split(' ');
    console.log(`  exit ${e.code} at ${e.s.toFixed(2)} s: CPU ${user} s user, ${sys} s system; ${c.commits} commits, ${c.transitions} transitions, ${c.statements} statements, ${c.roundTrips} round trips`);
  }
}
await sqlOn(admin, 'DROP DATABASE IF EXISTS dcmdiag_work');
await sqlOn(admin, 'DROP DATABASE IF EXISTS dcmdiag_tpl');
fs.rmSync(tmp, { recursive: true, force: true });
