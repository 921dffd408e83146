/**
 * `npm run sim -- --seed S [--schedules N] [--hosts H] [--db postgresql://…] [--trace] [--expect-violations] [--no-shrink]`:
 * runs N schedules drawn from seed S, on SQLite files, or each on a database of its own on the
 * PostgreSQL server `--db` names (several hosts, and the server's faults: store.ts). Schedule i
 * has a seed of its own, printed with any failure, which replays it alone (`--seed <its seed>
 * --schedules 1 --exact`). It checks the invariants after every commit and at the end, and prints
 * what it checked, the faults and recovery paths it hit per kind, and each violation with its seed
 * and a shrunk schedule. Exit 1 when a schedule broke an invariant (0 with --expect-violations:
 * the known breaks of several hosts, kept as such until they are fixed).
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { drawSchedule, smaller, type Schedule } from './schedule.js';
import { scheduleSeed } from './prng.js';
import { runSchedule, type Outcome } from './world.js';
import { INVARIANTS } from './judge.js';
import { isPgUrl, shownUrl } from '../domain/db-url.js';


export interface SimArgs {
  seed: number;
  schedules: number;
  hosts?: number;
  /** A PostgreSQL server to run each schedule on, in a database of its own (absent: SQLite files). */
  db?: string;
  trace: boolean;
  /** The seed is a schedule's own: run that schedule alone. */
  exact: boolean;
  expectViolations: boolean;
  /** Threads to run schedules on (default: one per core). */
  jobs: number;
  /** Print failing seeds without shrinking their schedules. */
  noShrink: boolean;
}

export function parseArgs(argv: string[]): SimArgs {
  const a: SimArgs = { seed: 1, schedules: 100, trace: false, exact: false, expectViolations: false, jobs: os.availableParallelism(), noShrink: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const num = () => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0) throw new Error(`${k} needs a whole number, got '${argv[i] ?? ''}'`);
      return v;
    };
    if (k === '--seed') a.seed = num();
    else if (k === '--schedules') a.schedules = num();
    else if (k === '--hosts') a.hosts = num();
    else if (k === '--db') a.db = argv[++i] ?? '';
    else if (k === '--jobs') a.jobs = Math.max(1, num());
    else if (k === '--trace') a.trace = true;
    else if (k === '--exact') a.exact = true;
    else if (k === '--expect-violations') a.expectViolations = true;
    else if (k === '--no-shrink') a.noShrink = true;
    else throw new Error(`unknown option '${k}' (use --seed S --schedules N [--hosts H] [--db postgresql://…] [--trace] [--exact] [--expect-violations] [--no-shrink] [--jobs N])`);
  }
  if (a.hosts === 0) throw new Error('--hosts needs 1 or more');
  if (a.db !== undefined && !isPgUrl(a.db)) throw new Error(`--db needs a postgresql:// address (a server to make the schedules' databases on), got '${a.db}'`);
  if (a.db !== undefined && a.hosts === 1) throw new Error('--db runs several hosts (--hosts 2 or more): on a server one host is workers whose processes it sees, and the simulator\'s are not real');
  return a;
}

/** A failing schedule made smaller while it still fails the same way (faults, sites and stages dropped one at a time). */
export async function shrink(s: Schedule, kind: string, server?: string, budget = SHRINK_RUNS): Promise<Schedule> {
  let best = s;
  for (let round = 0; round < 40 && budget > 0; round++) {
    let found = false;
    for (const c of smaller(best)) {
      if (budget-- <= 0) break;
      const o = await runSchedule(c, server);
      if (o.violations.some((v) => v.kind === kind)) {
        best = c;
        found = true;
        break;
      }
    }
    if (!found) break;
  }
  return best;
}

/** Schedules a shrink may run for one failure, and failures shrunk per run: the rest print their seed to replay. */
const SHRINK_RUNS = 60;
const SHRINK_FAILURES = 5;

export interface SimReport {
  schedules: number;
  failed: { seed: number; outcome: Outcome; shrunk: Schedule }[];
  hits: Record<string, number>;
  states: Record<string, number>;
  trace: string[];
}

/** The outcome of each seed, run on `jobs` threads (or here, for one). */
async function outcomes(seeds: number[], a: SimArgs): Promise<Map<number, Outcome>> {
  const out = new Map<number, Outcome>();
  const jobs = Math.min(a.jobs, seeds.length);
  if (jobs <= 1) {
    for (const seed of seeds) out.set(seed, await runSchedule(drawSchedule(seed, { hosts: a.hosts, server: a.db !== undefined }), a.db));
    return out;
  }
  // Handed out one at a time as each thread asks (a thread ready, or done with one), not split up
  // front: schedules with several hosts take many times as long as others.
  let next = 0;
  await Promise.all(
    Array.from({ length: jobs }, () => {
      const w = new Worker(new URL('./worker.js', import.meta.url), { workerData: { hosts: a.hosts, db: a.db, trace: a.trace } });
      w.on('message', (m: { seed: number; outcome: Outcome } | { ready: true }) => {
        if ('seed' in m) out.set(m.seed, m.outcome);
        w.postMessage(next < seeds.length ? seeds[next++] : null);
      });
      return new Promise<void>((resolve, reject) => {
        w.on('error', reject);
        w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`a simulator thread exited ${code}`))));
      });
    }),
  );
  return out;
}

export async function simulate(a: SimArgs, out: (line: string) => void = () => {}): Promise<SimReport> {
  const report: SimReport = { schedules: 0, failed: [], hits: {}, states: {}, trace: [] };
  const seeds = Array.from({ length: a.schedules }, (_, i) => (a.exact ? a.seed : scheduleSeed(a.seed, i)));
  const all = await outcomes(seeds, a);
  // In the order of the seeds, whatever thread ran them: the same seed prints the same report.
  for (const [i, seed] of seeds.entries()) {
    const s = drawSchedule(seed, { hosts: a.hosts, server: a.db !== undefined });
    const o = all.get(seed)!;
    report.schedules++;
    for (const [k, n] of Object.entries(o.hits)) report.hits[k] = (report.hits[k] ?? 0) + n;
    report.states[o.state] = (report.states[o.state] ?? 0) + 1;
    if (a.trace) report.trace.push(...o.trace.map((l) => `[${seed}] ${l}`));
    if (o.violations.length) {
      const shrunk = !a.noShrink && report.failed.length < SHRINK_FAILURES ? await shrink(s, o.violations[0].kind, a.db) : s;
      report.failed.push({ seed, outcome: o, shrunk });
      out(`schedule ${i} (seed ${seed}): ${o.violations.length} violation(s); first: ${o.violations[0].kind}: ${o.violations[0].text}`);
    }
  }
  return report;
}

export function summary(a: SimArgs, r: SimReport): string[] {
  const on = a.db ? `, on PostgreSQL (${shownUrl(a.db)})` : '';
  const lines = [`dcm sim: seed ${a.seed}, ${r.schedules} schedule(s)${a.hosts ? `, ${a.hosts} host(s)` : ''}${on}`];
  lines.push(`invariants checked after every commit and at each end:`, ...INVARIANTS.map((t) => `  - ${t}`));
  lines.push(`faults and recovery paths hit:`);
  for (const k of Object.keys(r.hits).sort()) lines.push(`  ${k.padEnd(18)} ${r.hits[k]}`);
  lines.push(`strategies ended: ${Object.entries(r.states).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  lines.push(`violations: ${r.failed.length} schedule(s)`);
  for (const f of r.failed) {
    lines.push(`  seed ${f.seed}: ${f.outcome.violations.map((v) => `${v.kind}: ${v.text}`).join('; ')}`);
    lines.push(`    replay: npm run sim -- --seed ${f.seed} --schedules 1 --exact --trace${a.hosts ? ` --hosts ${a.hosts}` : ''}${a.db ? ` --db ${shownUrl(a.db)}` : ''}`);
    lines.push(`    shrunk: ${JSON.stringify(f.shrunk)}`);
  }
  return lines;
}

export async function main(argv: string[]): Promise<number> {
  let a: SimArgs;
  try {
    a = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 2;
  }
  const r = await simulate(a, (l) => process.stderr.write(`${l}\n`));
  if (a.trace) process.stdout.write(`${r.trace.join('\n')}\n`);
  process.stdout.write(`${summary(a, r).join('\n')}\n`);
  return r.failed.length && !a.expectViolations ? 1 : 0;
}
