/**
 * Sliding window and stage barrier, end to end through the real sim driver (SPEC §5).
 *
 * The sim driver has no per-subcloud latency: its latency for (seed, cloud, state, attempt) is a
 * deterministic draw. The test picks a seed that makes s1 slower than s2, s3 and s4 put
 * together, checks that from the history, then checks how the window slid.
 */
import { describe, expect, test } from '@jest/globals';
import { drawFor } from '../../src/drivers/sim/random.js';
import { statesOf } from '../../src/domain/types.js';
import { dcm} from '../helpers/cli.js';
import { createFleet, flights, history, names, okRunProblems, peakInFlight, steps, summaryPeak, tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

const MIN = 10;
const MAX = 400;
const KUBE = statesOf('kubernetes');

/** The sim driver's latency of one operation (first draw of its generator). */
const latency = (seed: number, cloud: string, state: string) => MIN + Math.floor(drawFor(seed, cloud, state, 1)() * (MAX - MIN + 1));
const total = (seed: number, cloud: string) => KUBE.reduce((a, s) => a + latency(seed, cloud, s), 0);

const slowS1 = (seed: number, marginMs: number) =>
  total(seed, 's1') - total(seed, 's2') - total(seed, 's3') - total(seed, 's4') >= marginMs;

/** A seed found by the search below (it takes a while); searched again if the sim draws otherwise. */
const KNOWN_SEED = 49681;

function slowS1Seed(marginMs: number): number {
  if (slowS1(KNOWN_SEED, marginMs)) return KNOWN_SEED;
  for (let seed = 0; seed < 2_000_000; seed++) if (slowS1(seed, marginMs)) return seed;
  throw new Error('no seed found');
}

const temp = tempPerTest();

describe('apply: windows and stages (sim driver)', () => {
  test('window 2, s1 slow: s3 starts when s2 ends, s4 when s3 ends, while s1 still runs', () => {
    const t = temp();
    const seed = slowS1Seed(300);
    createFleet(t.db, names(4), ['--max-parallel-subclouds', '2', '--sim-latency', `${MIN}ms..${MAX}ms`, '--sim-seed', String(seed)], 'kubernetes');
    const r = dcm(['--db', t.db, '-q', 'strategy', 'apply']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);

    const runs = history(t.db);
    expect(okRunProblems(runs, names(4), KUBE)).toEqual([]);
    const f = flights(runs);
    const [s1, s2, s3, s4] = ['s1', 's2', 's3', 's4'].map((c) => f.get(c)!);
    // The seed did make s1 the slow one.
    expect(s1.end - s1.start).toBeGreaterThan(s2.end - s2.start + (s3.end - s3.start) + (s4.end - s4.start));
    // s1 and s2 start together; then each start follows the end of the one before it, at once.
    expect(Math.max(s1.start, s2.start)).toBeLessThan(s2.end);
    // (How soon after is the bench's figure 2: the gap between an end and the next start.)
    expect(s3.start).toBeGreaterThan(s2.end);
    expect(s4.start).toBeGreaterThan(s3.end);
    // ... while s1 still runs.
    expect(s1.end).toBeGreaterThan(s4.end);
    expect(peakInFlight(f.values())).toBe(2);
    // The steps' own times agree.
    const st = Object.fromEntries(steps(t.db).map((s) => [s.cloud, s]));
    expect(st.s3.started_at! >= st.s2.finished_at!).toBe(true);
    expect(st.s4.started_at! >= st.s3.finished_at!).toBe(true);
    expect(st.s1.finished_at! > st.s4.finished_at!).toBe(true);
  });

  test('stage barrier: no stage-2 step starts before every stage-1 step ended; each stage keeps its own window', () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '3']);
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'wave', '--max_parallel_subclouds', '5']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(9, 'c'), '--group', 'canary']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(15, 'w'), '--group', 'wave']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '1ms..25ms']);
    const r = dcm(['--db', t.db, 'strategy', 'apply']);
    expect(r.code).toBe(0);
    expect(summaryPeak(r.stderr)).toEqual({ peak: 5, window: 5 });

    const st = steps(t.db);
    expect(new Set(st.filter((s) => s.cloud.startsWith('c')).map((s) => s.stage))).toEqual(new Set([1]));
    expect(new Set(st.filter((s) => s.cloud.startsWith('w')).map((s) => s.stage))).toEqual(new Set([2]));
    const runs = history(t.db);
    const f = [...flights(runs).values()];
    const stage1 = f.filter((x) => x.cloud.startsWith('c'));
    const stage2 = f.filter((x) => x.cloud.startsWith('w'));
    expect(stage1).toHaveLength(9);
    expect(stage2).toHaveLength(15);
    const lastEnd1 = Math.max(...stage1.map((x) => x.end));
    expect(Math.min(...stage2.map((x) => x.start))).toBeGreaterThan(lastEnd1);
    const lastStepEnd1 = st.filter((s) => s.stage === 1).map((s) => s.finished_at!).sort().at(-1)!;
    expect(st.filter((s) => s.stage === 2).every((s) => s.started_at! > lastStepEnd1)).toBe(true);
    expect(peakInFlight(stage1)).toBe(3);
    expect(peakInFlight(stage2)).toBe(5);
  });
});
