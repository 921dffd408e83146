/**
 * The simulator (src/sim) as the suite runs it, through `npm run sim`'s script on the built code:
 * a fixed set of seeds that must keep every invariant on one host, a budgeted run of fresh seeds
 * (printed, so a failure replays), the same seed replaying the same trace, and the known breaks of
 * several hosts (issue 30) kept as expected failures until that issue turns them green.
 */
import { describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';

function sim(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bench/sim.js'), ...args], { encoding: 'utf8', timeout: 600_000 });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** The count of a fault or recovery path in the summary. */
function hits(out: string, kind: string): number {
  const m = new RegExp(`^\\s+${kind}\\s+(\\d+)$`, 'm').exec(out);
  return m ? Number(m[1]) : 0;
}

describe('dcm sim', () => {
  test('one host: the fixed seeds keep every invariant, and the run says what it tried', () => {
    const r = sim(['--seed', '1', '--schedules', '60', '--hosts', '1']);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
    expect(r.code).toBe(0);
    // A green run that tried nothing proves nothing: each fault and recovery path was met.
    for (const kind of ['kill', 'busy', 'adopted', 'interrupted-rerun', 'lock-takeover', 'retry', 'pause', 'resume', 'window']) {
      expect([kind, hits(r.out, kind)]).toEqual([kind, expect.any(Number)]);
      expect(hits(r.out, kind)).toBeGreaterThan(0);
    }
    expect(r.out).toMatch(/at most one operation per site at a time/);
  });

  test('one host: a budgeted run of fresh seeds (its seed printed to replay it)', () => {
    const seed = Number(process.env.DCM_SIM_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`dcm sim: fresh seed ${seed} (replay: npm run sim -- --seed ${seed} --schedules 40 --hosts 1)`);
    const r = sim(['--seed', String(seed), '--schedules', '40', '--hosts', '1']);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
  });

  test('a seed replays the same trace', () => {
    const a = sim(['--seed', '935528834', '--schedules', '1', '--exact', '--trace', '--expect-violations', '--jobs', '1']);
    const b = sim(['--seed', '935528834', '--schedules', '1', '--exact', '--trace', '--expect-violations', '--jobs', '1']);
    expect(a.out.split('\n').length).toBeGreaterThan(50);
    expect(b.out).toBe(a.out);
  });

  // Issue 30, break 1: a worker killed on one host has its runs started again on another while they
  // still run (two operations on a site at once, the window exceeded, states ended ok twice). Kept
  // as an expected failure: this test fails while the break is there, and so passes as `failing`.
  test.failing('several hosts: a run that may still be going is never run again elsewhere (issue 30)', () => {
    const r = sim(['--seed', '7', '--schedules', '8', '--hosts', '3', '--no-shrink']);
    expect(r.out).toMatch(/violations: 0 schedule\(s\)/);
  });
});
