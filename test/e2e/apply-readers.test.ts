/**
 * Readers never fail (SPEC §2): three processes listing the steps in a loop while an apply of
 * 2000 subclouds commits, get valid JSON every time, exit 0, and print nothing on stderr.
 */
import { describe, expect, test } from '@jest/globals';
import { type RunResult } from '../helpers/cli.js';
import { countBy, createFleet, names, steps, spawnDcm, tempPerTest } from '../helpers/history.js';

const N = 2000;

const temp = tempPerTest();

describe('apply: readers never fail', () => {
  test('three `strategy-step list -f json` loops during an apply of 2000 subclouds', async () => {
    const t = temp();
    createFleet(t.db, names(N), ['--max-parallel-subclouds', '100', '--sim-latency', '20ms..60ms']);
    const apply = spawnDcm(['--db', t.db, '-q', 'strategy', 'apply']);
    let applying = true;
    const applied = apply.done.then((r) => {
      applying = false;
      return r;
    });

    const failures: string[] = [];
    const reader = async (): Promise<{ reads: number; during: number; states: Set<string> }> => {
      let reads = 0;
      let during = 0;
      const states = new Set<string>();
      while (applying) {
        const wasApplying = applying;
        const r: RunResult = await spawnDcm(['--db', t.db, 'strategy-step', 'list', '-f', 'json']).done;
        reads++;
        if (r.code !== 0 || r.stderr !== '') {
          failures.push(`exit ${r.code}: ${r.stderr}`);
          continue;
        }
        try {
          const rows = JSON.parse(r.stdout) as { state: string }[];
          if (rows.length !== N) failures.push(`${rows.length} rows`);
          for (const row of rows) states.add(row.state);
          if (wasApplying && applying) during++;
        } catch (err) {
          failures.push(`bad JSON (${(err as Error).message}): ${r.stdout.slice(0, 200)}`);
        }
      }
      return { reads, during, states };
    };
    const results = await Promise.all([reader(), reader(), reader()]);
    const r = await applied;

    expect(failures).toEqual([]);
    expect(failures.join('\n')).not.toMatch(/SQLITE_BUSY|database is locked/);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const x of results) expect(x.during).toBeGreaterThanOrEqual(2);
    // The readers saw the apply at work, not only before or after it.
    const seen = new Set(results.flatMap((x) => [...x.states]));
    expect([...seen].some((s) => !['initial', 'complete'].includes(s))).toBe(true);
    expect(countBy(steps(t.db), (s) => s.state)).toEqual({ complete: N });
  });
});
