/**
 * The simulator (src/sim) as the suite runs it, through `npm run sim`'s script on the built code:
 * the real `strategy apply` (commands/apply-service.ts) and the real commands, on a runtime that
 * owns time and processes, judged by the invariants after every commit.
 *
 *   - fixed seeds on one host and on three keep every invariant, and meet the faults they are for
 *     (a green run that tried nothing proves nothing); they are also the unmutated baseline of
 *     the mutants below, which draw from the same seed within these counts;
 *   - a budgeted run of fresh seeds, its seed printed to replay it;
 *   - a seed replays the same trace, on one thread or among others;
 *   - every schedule kept in test/sim/regressions (each a break found by the simulator, with what
 *     it was) keeps every invariant and still reaches the paths it is about;
 *   - every mutant (src/sim/mutants: dcm's own faults, kept as patches) is caught within its budget.
 */
import { describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';

const REGRESSIONS = path.join(ROOT, 'test', 'sim', 'regressions');

function sim(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bench/sim.js'), ...args], { encoding: 'utf8', timeout: 900_000, maxBuffer: 256 * 1024 * 1024 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** The count of a fault or recovery path in the summary's table (times met). */
function hits(out: string, kind: string): number {
  const m = new RegExp(`^\\s+${kind}\\s+(\\d+)\\s+\\d+$`, 'm').exec(out);
  return m ? Number(m[1]) : 0;
}

/** The paths a run reached (the summary's "what each fault reached"), with how many schedules reached each. */
function reached(out: string): Map<string, number> {
  const paths = new Map<string, number>();
  for (const line of out.split('\n')) {
    const m = /^ {2}\S+ \(\d+\): (.*)$/.exec(line);
    if (!m) continue;
    for (const part of m[1].split(', ')) {
      const p = /^(.*) (\d+)$/.exec(part);
      if (p) paths.set(p[1], Math.max(paths.get(p[1]) ?? 0, Number(p[2])));
    }
  }
  return paths;
}

/** The trace lines of schedule `seed` in a run's output. */
function traceOf(out: string, seed: string): string[] {
  return out.split('\n').filter((l) => l.startsWith(`[${seed}] `));
}

describe('dcm sim', () => {
  test('one host: the fixed seeds keep every invariant, and meet the faults and paths they are for', () => {
    const r = sim(['--seed', '1', '--schedules', '300', '--hosts', '1', '--no-shrink']);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
    expect(r.code).toBe(0);
    for (const kind of ['kill', 'busy', 'interrupt', 'pause', 'resume', 'window', 'abort', 'abort-no-apply', 'abort-left-going', 'clock-step', 'adopted', 'interrupted-rerun']) {
      expect([kind, hits(r.out, kind) > 0]).toEqual([kind, true]);
    }
    const paths = reached(r.out);
    for (const p of ['lock taken over', 'runs adopted', 'deferred', 'aborted', 'updated']) expect([p, (paths.get(p) ?? 0) > 0]).toEqual([p, true]);
    // Liveness is judged, not only safety: schedules still going at their quiet ended within their bound.
    expect(r.out).toMatch(/^liveness: ([1-9]\d*) schedule\(s\) reached their quiet, \1 ended within their bound, 0 did not$/m);
    expect(r.out).toMatch(/at most one operation per site at a time/);
  });

  test('three hosts: the fixed seeds keep every invariant through workers and hosts frozen, cut off, lost, and clocks stepped', () => {
    const r = sim(['--seed', '1', '--schedules', '300', '--hosts', '3', '--no-shrink']);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
    expect(r.code).toBe(0);
    for (const kind of ['freeze', 'kill', 'freeze-host', 'cut-host', 'lose-host', 'clock-step', 'resolve', 'busy', 'takeover-note']) {
      expect([kind, hits(r.out, kind) > 0]).toEqual([kind, true]);
    }
    const paths = reached(r.out);
    // Runs of a host frozen or cut off past the wait bound held, never run again by themselves; the operator resolves them.
    for (const p of ['worker taken over', 'run unknown', 'run resolved']) expect([p, (paths.get(p) ?? 0) > 0]).toEqual([p, true]);
  });

  test('a budgeted run of fresh seeds (its seed printed to replay it)', () => {
    const seed = Number(process.env.DCM_SIM_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`dcm sim: fresh seed ${seed} (replay: npm run sim -- --seed ${seed} --schedules 120)`);
    const r = sim(['--seed', String(seed), '--schedules', '120']);
    expect([seed, r.out.match(/^schedule \d+ \(seed \d+\).*$/gm) ?? []]).toEqual([seed, []]);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
  });

  // Three hosts, two lost for good, the store held by another session's LOCK TABLE: a takeover,
  // held runs and the operator's resolve, all in the trace.
  test('a seed replays the same trace, alone or among others on two threads', () => {
    const seed = '1014351789';
    const a = sim(['--seed', seed, '--schedules', '1', '--exact', '--hosts', '3', '--trace', '--jobs', '1']);
    const b = sim(['--seed', seed, '--schedules', '1', '--exact', '--hosts', '3', '--trace', '--jobs', '1']);
    expect(traceOf(a.out, seed).length).toBeGreaterThan(50);
    expect(traceOf(b.out, seed)).toEqual(traceOf(a.out, seed));
    expect(a.out).toContain('took over the worker');
    expect(a.out).toContain('operator: resolve');
  });

  const kept = fs.readdirSync(REGRESSIONS).filter((f) => f.endsWith('.json')).sort();
  test.each(kept)('the kept schedule %s keeps every invariant and reaches what it is about', (file) => {
    const schedule = JSON.parse(fs.readFileSync(path.join(REGRESSIONS, file), 'utf8')) as { note: string; reaches: string[] };
    expect(schedule.note.length).toBeGreaterThan(40);
    const r = sim(['--schedule', path.join(REGRESSIONS, file)]);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
    expect(r.code).toBe(0);
    for (const p of schedule.reaches) expect([p, hits(r.out, p) > 0 || reached(r.out).has(p)]).toEqual([p, true]);
  });

  // Each mutant is a fault of dcm's own code kept as a patch; the simulator must catch each within
  // its budget (the fixed seeds above are the unmutated build's run of the same schedules).
  test('every mutant is caught within its budget', () => {
    const r = sim(['--mutants']);
    const table = r.out.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| mutant'));
    const index = JSON.parse(fs.readFileSync(path.join(ROOT, 'src', 'sim', 'mutants', 'index.json'), 'utf8')) as { name: string }[];
    expect(table.map((l) => l.split(' | ')[0].slice(2))).toEqual(index.map((m) => m.name));
    expect(table.filter((l) => /NOT CAUGHT|error:/.test(l))).toEqual([]);
    expect(r.out).toMatch(new RegExp(`^dcm sim --mutants: ${index.length} of ${index.length} caught$`, 'm'));
    expect(r.code).toBe(0);
  });

  // On a server (test/pg/sim.test.ts runs it there): a file's path, or one host, is refused with the reason.
  test.each([
    ["a file's path", ['--db', 'fleet.db'], /^error: --db needs a postgresql:\/\/ address/],
    ['a server with one host', ['--db', 'postgresql:///x', '--hosts', '1'], /^error: --db runs several hosts \(--hosts 2 or more\)/],
    ['an unknown option', ['--bogus'], /^error: unknown option '--bogus' \(use --seed S/],
    ['a schedule that is not there', ['--schedule', '/nonexistent/s.json'], /^error: cannot read the schedule \/nonexistent\/s\.json: ENOENT$/],
  ])('%s is refused, exit 2, one line', (_what, args, message) => {
    const r = sim(['--seed', '1', '--schedules', '1', ...args]);
    expect(r.code).toBe(2);
    expect(r.err.trim()).toMatch(message);
    expect(r.err.trim().split('\n')).toHaveLength(1);
  });
});
