/**
 * The simulator (src/sim) on the PostgreSQL pass's server (`npm run sim -- --db postgresql://…`):
 * each schedule on a database of its own there, the real PostgreSQL store under several workers
 * on several hosts, with the server cutting dcm's sessions. What a file cannot show: the store's
 * own SQL, its writers' lock, its snapshots and its way back from a lost connection, under the
 * schedules that found the several-hosts breaks.
 */
import { describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { pgTestUrl } from '../helpers/pg-databases.js';

function sim(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bench/sim.js'), ...args, '--db', pgTestUrl()!], { encoding: 'utf8', timeout: 600_000 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** The count of a fault or recovery path in the summary. */
function hits(out: string, kind: string): number {
  const m = new RegExp(`^\\s+${kind}\\s+(\\d+)$`, 'm').exec(out);
  return m ? Number(m[1]) : 0;
}

/** The trace lines of schedule `seed` in a run's output. */
function traceOf(out: string, seed: string): string[] {
  return out.split('\n').filter((l) => l.startsWith(`[${seed}] `));
}

describe('dcm sim on PostgreSQL', () => {
  // The seeds of issue 30's first break (test/sim/sim.test.ts runs them on files): workers frozen
  // past their lease and killed, their runs' ends taken from the store; and here sessions cut, and
  // the store held busy past the lease.
  // Schedule 230278033 among them has its sessions cut while three workers run: each says so, and
  // replayed alone by its seed, on one thread rather than two, it prints the same trace.
  test('several hosts, sessions cut by the server: every invariant kept, the run says what it met, and a seed replays its trace', () => {
    const r = sim(['--seed', '7', '--schedules', '8', '--hosts', '3', '--no-shrink', '--trace']);
    expect(r.out).toMatch(/on PostgreSQL/);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
    expect(r.code).toBe(0);
    for (const kind of ['takeover', 'freeze', 'kill', 'cut', 'busy']) expect([kind, hits(r.out, kind) > 0]).toEqual([kind, true]);
    const seed = '230278033';
    const first = traceOf(r.out, seed);
    expect(first.filter((l) => l.includes("the server cut dcm's sessions"))).toHaveLength(1);
    expect(first.filter((l) => l.includes('the connection to the database server was lost: connecting again (nothing is lost meanwhile)'))).toHaveLength(3);
    const again = sim(['--seed', seed, '--schedules', '1', '--exact', '--trace', '--hosts', '3', '--jobs', '1']);
    expect(traceOf(again.out, seed)).toEqual(first);
    // A minute alone; more on a busy machine: each statement is a round trip to the server.
  }, 900_000);
});
