/**
 * `npm run sim -- --seed S [--schedules N] [--hosts H] [--db postgresql://…] [--trace] [--exact]
 * [--no-shrink] [--keep DIR] [--jobs N]`, `npm run sim -- --schedule FILE.json`, and `npm run sim --
 * --mutants [--only NAME]`.
 *
 * Runs N schedules drawn from seed S, on SQLite files, or each on a database of its own on the
 * PostgreSQL server `--db` names. Schedule i has a seed of its own, printed with any failure, which
 * replays it alone (`--seed <its seed> --schedules 1 --exact`); a failing schedule is shrunk, printed
 * as JSON and (with `--keep DIR`) written there, and `--schedule FILE` runs it again exactly. It
 * prints what it checked, the faults and recovery paths met, the safety and liveness counts, what
 * each fault reached, and each violation. Exit 1 when a schedule broke an invariant.
 *
 * `--mutants` runs each of dcm's own faults kept beside the simulator (mutants.ts) within its budget
 * and prints which were caught: exit 1 when one was not.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { drawSchedule, parseSchedule, type Schedule } from './schedule.js';
import { scheduleSeed } from './prng.js';
import { runMany, shrink } from './run.js';
import type { Outcome } from './world.js';
import { isPgUrl, shownUrl } from '../domain/db-url.js';
import { report, summaryLines, type SimReport } from './summary.js';
import { runMutants, mutantLines } from './mutants.js';

export interface SimArgs {
  seed: number;
  schedules: number;
  hosts?: number;
  /** A PostgreSQL server to run each schedule on, in a database of its own (absent: SQLite files). */
  db?: string;
  trace: boolean;
  /** The seed is a schedule's own: run that schedule alone. */
  exact: boolean;
  /** Threads to run schedules on (default: one per core). */
  jobs: number;
  /** Print failing seeds without shrinking their schedules. */
  noShrink: boolean;
  /** Write each shrunk failing schedule here, as `<seed>.json`. */
  keep?: string;
  /** Run this schedule (JSON, as printed or kept) instead of drawing any. */
  schedule?: string;
  /** Stop at the first schedule that breaks an invariant. */
  first: boolean;
  mutants: boolean;
  only?: string;
}

export function parseArgs(argv: string[]): SimArgs {
  const a: SimArgs = { seed: 1, schedules: 100, trace: false, exact: false, jobs: os.availableParallelism(), noShrink: false, first: false, mutants: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const num = () => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0) throw new Error(`${k} needs a whole number, got '${argv[i] ?? ''}'`);
      return v;
    };
    const text = () => {
      const v = argv[++i];
      if (v === undefined || v === '') throw new Error(`${k} needs a value`);
      return v;
    };
    if (k === '--seed') a.seed = num();
    else if (k === '--schedules') a.schedules = num();
    else if (k === '--hosts') a.hosts = num();
    else if (k === '--db') a.db = argv[++i] ?? '';
    else if (k === '--jobs') a.jobs = Math.max(1, num());
    else if (k === '--trace') a.trace = true;
    else if (k === '--exact') a.exact = true;
    else if (k === '--no-shrink') a.noShrink = true;
    else if (k === '--keep') a.keep = text();
    else if (k === '--schedule') a.schedule = text();
    else if (k === '--first') a.first = true;
    else if (k === '--mutants') a.mutants = true;
    else if (k === '--only') a.only = text();
    else throw new Error(`unknown option '${k}' (use --seed S --schedules N [--hosts H] [--db postgresql://…] [--trace] [--exact] [--no-shrink] [--keep DIR] [--first] [--jobs N], --schedule FILE, or --mutants [--only NAME])`);
  }
  if (a.hosts === 0) throw new Error('--hosts needs 1 or more');
  if (a.db !== undefined && !isPgUrl(a.db)) throw new Error(`--db needs a postgresql:// address (a server to make the schedules' databases on), got '${a.db}'`);
  if (a.db !== undefined && a.hosts === 1) throw new Error('--db runs several hosts (--hosts 2 or more): on a server one host is workers whose processes it sees, and the simulator\'s are not real');
  return a;
}

/** The schedules a run is made of: drawn from the seed, or the one in `--schedule FILE`. */
function schedulesOf(a: SimArgs): Schedule[] {
  if (a.schedule) {
    let text: string;
    try {
      text = fs.readFileSync(a.schedule, 'utf8');
    } catch (err) {
      throw new Error(`cannot read the schedule ${a.schedule}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    return [parseSchedule(text)];
  }
  return Array.from({ length: a.schedules }, (_, i) => drawSchedule(a.exact ? a.seed : scheduleSeed(a.seed, i), { hosts: a.hosts, server: a.db !== undefined }));
}

/** Failures shrunk per run: the rest print their seed to replay. */
const SHRINK_FAILURES = 5;

export async function simulate(a: SimArgs, out: (line: string) => void = () => {}): Promise<SimReport> {
  const schedules = schedulesOf(a);
  const outcomes = await runMany(schedules, { db: a.db, jobs: a.jobs, trace: a.trace || a.schedule !== undefined, stopAtFirst: a.first });
  const r = report();
  // In the order of the schedules, whatever thread ran them: the same seed prints the same report.
  for (const [i, s] of schedules.entries()) {
    const o = outcomes[i];
    if (!o) continue;
    r.add(s, o, a.trace || a.schedule !== undefined);
    if (!o.violations.length) continue;
    const shrunk = !a.noShrink && !a.schedule && r.failed.length <= SHRINK_FAILURES ? await shrink(s, o.violations[0].kind, a.db) : s;
    r.failed[r.failed.length - 1].shrunk = shrunk;
    if (a.keep) keep(a.keep, shrunk);
    out(`schedule ${i} (seed ${s.seed}): ${o.violations.length} violation(s); first: ${o.violations[0].kind}: ${o.violations[0].text}`);
  }
  return r;
}

/** A shrunk failure kept as a file, to replay and to keep as a test. */
function keep(dir: string, s: Schedule): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${s.seed}.json`), `${JSON.stringify(s, null, 2)}\n`);
}

export function title(a: SimArgs, r: SimReport): string {
  const on = a.db ? `, on PostgreSQL (${shownUrl(a.db)})` : '';
  return a.schedule ? `dcm sim: the schedule in ${a.schedule}${on}` : `dcm sim: seed ${a.seed}, ${r.schedules} schedule(s)${a.hosts ? `, ${a.hosts} host(s)` : ''}${on}`;
}

export async function main(argv: string[]): Promise<number> {
  let a: SimArgs;
  try {
    a = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 2;
  }
  if (a.mutants) {
    const results = await runMutants({ only: a.only, jobs: a.jobs, out: (l) => process.stderr.write(`${l}\n`) });
    process.stdout.write(`${mutantLines(results).join('\n')}\n`);
    return results.every((m) => m.caught) ? 0 : 1;
  }
  let r: SimReport;
  try {
    r = await simulate(a, (l) => process.stderr.write(`${l}\n`));
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 2;
  }
  if (a.trace || a.schedule) process.stdout.write(`${r.trace.join('\n')}\n`);
  process.stdout.write(`${[title(a, r), ...summaryLines(r, a)].join('\n')}\n`);
  return r.failed.length ? 1 : 0;
}

export type { Outcome };
