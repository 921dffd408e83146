/**
 * What a run of the simulator says: the invariants it checked, every fault and recovery path it
 * met and in how many schedules, the safety and liveness counts, for each kind of fault the paths of
 * dcm it reached (a path: an event dcm recorded, or a recovery the simulator saw, in a schedule that
 * met the fault), and each violation with how to replay it.
 */
import { INVARIANTS } from './judge.js';
import type { Schedule } from './schedule.js';
import type { Outcome } from './world.js';

/** The faults a schedule may hold (schedule.ts), as the summary names them. */
export const FAULT_KINDS = [
  'kill', 'busy', 'lock-table', 'pause', 'window', 'abort', 'abort-no-apply', 'interrupt', 'freeze', 'freeze-host', 'cut-host',
  'lose-host', 'clock-step', 'cut', 'commit-lost',
];

export interface Failed {
  seed: number;
  outcome: Outcome;
  shrunk: Schedule;
}

export interface SimReport {
  schedules: number;
  failed: Failed[];
  /** Count of each fault and path, over all schedules. */
  hits: Record<string, number>;
  /** Schedules that met each fault or path. */
  met: Record<string, number>;
  /** For each fault: in how many of the schedules that met it each path was reached. */
  reached: Record<string, Record<string, number>>;
  states: Record<string, number>;
  trace: string[];
  safety: { judged: number; broke: number };
  liveness: { judged: number; ended: number; late: number };
  add(s: Schedule, o: Outcome, trace: boolean): void;
}

export function report(): SimReport {
  const r: SimReport = {
    schedules: 0,
    failed: [],
    hits: {},
    met: {},
    reached: {},
    states: {},
    trace: [],
    safety: { judged: 0, broke: 0 },
    liveness: { judged: 0, ended: 0, late: 0 },
    add(s, o, trace) {
      r.schedules++;
      for (const [k, n] of Object.entries(o.hits)) {
        r.hits[k] = (r.hits[k] ?? 0) + n;
        r.met[k] = (r.met[k] ?? 0) + 1;
      }
      const faults = Object.keys(o.hits).filter((k) => FAULT_KINDS.includes(k));
      const paths = [...new Set([...Object.keys(o.hits).filter((k) => !FAULT_KINDS.includes(k)), ...o.paths])];
      for (const f of faults) {
        const into = (r.reached[f] ??= {});
        for (const p of paths) into[p] = (into[p] ?? 0) + 1;
      }
      r.states[o.state] = (r.states[o.state] ?? 0) + 1;
      r.safety.judged++;
      if (o.violations.some((v) => v.kind !== 'liveness' && v.kind !== 'not-ended')) r.safety.broke++;
      if (o.quiet) {
        r.liveness.judged++;
        if (o.violations.some((v) => v.kind === 'liveness')) r.liveness.late++;
        else r.liveness.ended++;
      }
      if (trace) r.trace.push(...o.trace.map((l) => `[${s.seed}] ${l}`));
      if (o.violations.length) r.failed.push({ seed: s.seed, outcome: o, shrunk: s });
    },
  };
  return r;
}

export function summaryLines(r: SimReport, a: { hosts?: number; db?: string; schedule?: string }): string[] {
  const lines = [`invariants checked after every commit and at each end:`, ...INVARIANTS.map((t) => `  - ${t}`)];
  lines.push(`faults and recovery paths met (times; schedules):`);
  for (const k of Object.keys(r.hits).sort()) lines.push(`  ${k.padEnd(22)} ${String(r.hits[k]).padStart(6)}  ${String(r.met[k]).padStart(6)}`);
  lines.push(`safety: ${r.safety.judged} schedule(s) judged, ${r.safety.broke} broke an invariant`);
  lines.push(`liveness: ${r.liveness.judged} schedule(s) reached their quiet, ${r.liveness.ended} ended within their bound, ${r.liveness.late} did not`);
  lines.push(`what each fault reached (schedules that met it: the paths reached, in how many of them):`);
  for (const f of FAULT_KINDS) {
    const into = r.reached[f];
    if (!into) continue;
    const paths = Object.entries(into).sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0])).map(([p, n]) => `${p} ${n}`);
    lines.push(`  ${f} (${r.met[f]}): ${paths.join(', ') || 'nothing'}`);
  }
  lines.push(`strategies ended: ${Object.entries(r.states).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  lines.push(`violations: ${r.failed.length} schedule(s)`);
  for (const f of r.failed) {
    lines.push(`  seed ${f.seed}: ${f.outcome.violations.map((v) => `${v.kind}: ${v.text}`).join('; ')}`);
    if (!a.schedule) lines.push(`    replay: npm run sim -- --seed ${f.seed} --schedules 1 --exact --trace${a.hosts ? ` --hosts ${a.hosts}` : ''}${a.db ? ' --db …' : ''}`);
    lines.push(`    shrunk (npm run sim -- --schedule FILE runs it): ${JSON.stringify(f.shrunk)}`);
  }
  return lines;
}
