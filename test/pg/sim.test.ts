/**
 * The simulator (src/sim) on the PostgreSQL pass's server (`npm run sim -- --db postgresql://…`):
 * each schedule on a database of its own there, the real PostgreSQL store under several workers on
 * several hosts. dcm's sessions take turns on the server in an order drawn from the seed (one query
 * at a time, the next once the last is answered or waits on another session's lock: sim/pg-turns.ts),
 * the server cuts one host's sessions or all, a COMMIT's answer is lost, another session holds
 * LOCK TABLE. What a file cannot show: the store's own SQL, its locks, its snapshots and its way
 * back from a lost connection.
 */
import { describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { pgTestUrl } from '../helpers/pg-databases.js';

function sim(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bench/sim.js'), ...args, '--db', pgTestUrl()!], { encoding: 'utf8', timeout: 900_000, maxBuffer: 256 * 1024 * 1024 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** The count of a fault or recovery path in the summary's table (times met). */
function hits(out: string, kind: string): number {
  const m = new RegExp(`^\\s+${kind}\\s+(\\d+)\\s+\\d+$`, 'm').exec(out);
  return m ? Number(m[1]) : 0;
}

/** The trace lines of schedule `seed` in a run's output. */
function traceOf(out: string, seed: string): string[] {
  return out.split('\n').filter((l) => l.startsWith(`[${seed}] `));
}

describe('dcm sim on PostgreSQL', () => {
  test('several hosts, sessions cut and commits\' answers lost: every invariant kept, and the run says what it met', () => {
    const r = sim(['--seed', '7', '--schedules', '16', '--hosts', '3', '--no-shrink']);
    expect(r.out).toMatch(/^dcm sim: seed 7, 16 schedule\(s\), 3 host\(s\), on PostgreSQL/m);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
    expect(r.code).toBe(0);
    for (const kind of ['cut', 'commit-lost', 'takeover-note']) expect([kind, hits(r.out, kind) > 0]).toEqual([kind, true]);
  }, 900_000);

  // Schedules kept from the simulator on a server (each a break found there, with what it was):
  // what only a server's faults reach (a COMMIT's answer lost), so not among test/sim's.
  const REGRESSIONS = path.join(ROOT, 'test', 'pg', 'regressions');
  const kept = fs.readdirSync(REGRESSIONS).filter((f) => f.endsWith('.json')).sort();
  test.each(kept)('the kept schedule %s keeps every invariant on the server and reaches what it is about', (file) => {
    const schedule = JSON.parse(fs.readFileSync(path.join(REGRESSIONS, file), 'utf8')) as { note: string; reaches: string[] };
    expect(schedule.note.length).toBeGreaterThan(40);
    const r = sim(['--schedule', path.join(REGRESSIONS, file)]);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
    expect(r.code).toBe(0);
    for (const p of schedule.reaches) expect([p, hits(r.out, p) > 0]).toEqual([p, true]);
  }, 900_000);

  // The interleaving of the workers' queries is the seed's, not the machine's: the same seed, run
  // alone on one thread or among others on two, prints the same trace.
  test('a seed replays the same trace on the server', () => {
    const seed = '230278033';
    const first = traceOf(sim(['--seed', seed, '--schedules', '1', '--exact', '--hosts', '3', '--trace', '--jobs', '1']).out, seed);
    expect(first.length).toBeGreaterThan(30);
    const again = traceOf(sim(['--seed', seed, '--schedules', '1', '--exact', '--hosts', '3', '--trace', '--jobs', '2']).out, seed);
    expect(again).toEqual(first);
  }, 900_000);
});
