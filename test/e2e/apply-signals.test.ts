/**
 * Ctrl-C and SIGTERM drain and leave the strategy applying (SPEC §6); one orchestrator per file:
 * a second apply exits 4 naming the holder, and a killed holder's lock is taken over.
 */
import { describe, expect, test } from '@jest/globals';
import os from 'node:os';
import { statesOf } from '../../src/domain/types.js';
import { dcm, waitFor } from '../helpers/cli.js';
import { countBy, createFleet, history, names, okRunProblems, steps, strategyState, spawnDcm, tempPerTest } from '../helpers/history.js';

const PATCH = statesOf('patch');
const KUBE = statesOf('kubernetes');

const temp = tempPerTest();

const transitions = (stderr: string) => (stderr.match(/ -> /g) ?? []).length;

describe('apply: signals', () => {
  test.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s: says so, drains, exits %i with the strategy applying; a later apply finishes it', async (signal, code) => {
    const t = temp();
    createFleet(t.db, names(40), ['--max-parallel-subclouds', '5', '--sim-latency', '40ms..80ms']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply', '-v']);
    await waitFor(() => transitions(apply.stderr()) >= 12, 20_000, 5);
    apply.child.kill(signal);
    const r = await apply.done;
    expect(r.code).toBe(code);
    expect(r.stderr).toMatch(new RegExp(`dcm: ${signal}: starting nothing new, waiting for \\d+ operation\\(s\\) in flight`));
    expect(r.stderr).not.toMatch(/error:/);
    expect(strategyState(t.db)).toBe('applying');
    // Drained: the operations in flight ended and were committed; none is left running.
    const mid = history(t.db);
    expect(mid.filter((h) => h.outcome !== 'ok')).toEqual([]);
    const left = countBy(steps(t.db), (s) => s.state);
    expect(left.initial).toBeGreaterThan(0);

    const again = dcm(['--db', t.db, 'strategy', 'apply']);
    expect(again.stderr).toContain('dcm: resuming the patch strategy (state applying)\n');
    expect(again.code).toBe(0);
    expect(strategyState(t.db)).toBe('complete');
    const runs = history(t.db);
    expect(okRunProblems(runs, names(40), PATCH)).toEqual([]);
    // The drain let every operation finish: nothing ran twice.
    expect(runs.every((h) => h.attempt === 1 && h.outcome === 'ok')).toBe(true);
  });
});

describe('apply: a second Ctrl-C', () => {
  test('stops waiting: exit 130 at once; the operations cut short run again on resume, as attempt 2', async () => {
    const t = temp();
    createFleet(t.db, names(3), ['--max-parallel-subclouds', '3', '--sim-latency', '1s'], 'kubernetes');
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply', '-v']);
    await waitFor(() => transitions(apply.stderr()) >= 3, 20_000, 5);
    apply.child.kill('SIGINT');
    await waitFor(() => apply.stderr().includes('dcm: SIGINT: starting nothing new'), 5_000, 5);
    apply.child.kill('SIGINT');
    // "At once" is judged by what it did, not by a clock: it did not wait for the operations in
    // flight (they are interrupted below, not finished); how soon is the bench's business.
    const r = await apply.done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/dcm: SIGINT again: not waiting for 3 operation\(s\) in flight/);
    expect(strategyState(t.db)).toBe('applying');
    // Cut short, so they will run again; the history says so at once.
    expect(history(t.db).map((h) => h.outcome)).toEqual(['interrupted', 'interrupted', 'interrupted']);

    const again = dcm(['--db', t.db, '-q', 'strategy', 'apply']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    const runs = history(t.db);
    expect(okRunProblems(runs, names(3), KUBE)).toEqual([]);
    expect(runs.filter((h) => h.state === KUBE[0]).map((h) => `${h.cloud}#${h.attempt}:${h.outcome}`).sort()).toEqual([
      's1#1:interrupted', 's1#2:ok', 's2#1:interrupted', 's2#2:ok', 's3#1:interrupted', 's3#2:ok',
    ]);
  });
});

describe('apply: one orchestrator per file', () => {
  test('a second apply exits 4 naming the holder; once the holder is killed, its lock is taken over', async () => {
    const t = temp();
    createFleet(t.db, names(4), ['--max-parallel-subclouds', '4', '--sim-latency', '1s'], 'kubernetes');
    const first = spawnDcm(['--db', t.db, 'strategy', 'apply', '-v']);
    try {
      await waitFor(() => transitions(first.stderr()) >= 4, 20_000, 5);
      const second = dcm(['--db', t.db, 'strategy', 'apply']);
      expect(second.code).toBe(4);
      expect(second.stdout).toBe('');
      expect(second.stderr).toMatch(
        new RegExp(`^error: another orchestrator holds .*dcm\\.db: pid ${first.child.pid} on host ${os.hostname()} since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{6}\\n$`),
      );
      // The first one goes on undisturbed.
      expect(first.child.exitCode).toBeNull();
    } finally {
      first.child.kill('SIGKILL');
    }
    expect((await first.done).signal).toBe('SIGKILL');
    expect(strategyState(t.db)).toBe('applying');

    const third = dcm(['--db', t.db, 'strategy', 'apply']);
    expect(third.stderr).toContain(`dcm: took over the apply lock of pid ${first.child.pid} on ${os.hostname()} (no longer running)\n`);
    expect(third.code).toBe(0);
    expect(strategyState(t.db)).toBe('complete');
    const runs = history(t.db);
    expect(okRunProblems(runs, names(4), KUBE)).toEqual([]);
    expect(runs.filter((h) => h.outcome === 'interrupted')).toHaveLength(4);
  });
});
