/**
 * Running schedules: on threads, handed out as each asks (several hosts take many times as long as
 * one), each outcome kept in the order of its schedule, whatever thread ran it; and shrinking a
 * failing schedule while it still fails the same way.
 */
import { Worker } from 'node:worker_threads';
import { smaller, type Schedule } from './schedule.js';
import { runSchedule, type Outcome } from './world.js';

export interface RunOptions {
  /** A PostgreSQL server to run each schedule on, in a database of its own (absent: SQLite files). */
  db?: string;
  jobs: number;
  trace: boolean;
  /** Stop handing schedules out once one breaks an invariant (the mutants' budget). */
  stopAtFirst?: boolean;
}

/** The outcome of each schedule, by its index; with `stopAtFirst`, those run until the first failure. */
export async function runMany(schedules: Schedule[], o: RunOptions): Promise<(Outcome | undefined)[]> {
  const out: (Outcome | undefined)[] = new Array(schedules.length);
  let failed = false;
  const jobs = Math.min(o.jobs, schedules.length);
  if (jobs <= 1) {
    for (const [i, s] of schedules.entries()) {
      out[i] = await runSchedule(s, o.db);
      if (o.stopAtFirst && out[i]!.violations.length) break;
    }
    return out;
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: jobs }, () => {
      const w = new Worker(new URL('./worker.js', import.meta.url), { workerData: { db: o.db, trace: o.trace } });
      w.on('message', (m: { i: number; outcome: Outcome } | { ready: true }) => {
        if ('i' in m) {
          out[m.i] = m.outcome;
          if (m.outcome.violations.length) failed = true;
        }
        const more = next < schedules.length && !(o.stopAtFirst && failed);
        w.postMessage(more ? { i: next, schedule: schedules[next++] } : null);
      });
      return new Promise<void>((resolve, reject) => {
        w.on('error', reject);
        w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`a simulator thread exited ${code}`))));
      });
    }),
  );
  return out;
}

/** Schedules a shrink may run for one failure. */
export const SHRINK_RUNS = 60;

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
