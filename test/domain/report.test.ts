/** The report's model (pure): lanes, lanes of several subclouds, failures, durations. */
import { describe, expect, test } from '@jest/globals';
import { buildReport, type ReportInput, type ReportRun, type ReportStep } from '../../src/domain/report.js';

const STATES = ['a', 'b', 'c'];
const S = 1_000_000; // one second in microseconds
const T0 = 1_700_000_000 * S;

function input(steps: ReportStep[], runs: ReportRun[], stages = [{ stage: 1, window: 2, group: 'g' }], extra: Partial<ReportInput> = {}): ReportInput {
  return {
    strategy: { type: 'patch', state: 'failed', createdAt: '2026-01-01 00:00:00.000000', updatedAt: null, stopOnFailure: false, subcloudApplyType: null, maxParallelSubclouds: null, driver: 'sim' },
    states: STATES,
    stages,
    steps,
    runs,
    nowUs: T0 + 100 * S,
    ...extra,
  };
}

/** A step that ran `durations` (seconds) through the states from `start`, failing in the last one if `fail`. */
function walk(id: number, cloud: string, stage: number, start: number, durations: number[], fail = false): { step: ReportStep; runs: ReportRun[] } {
  let t = T0 + start * S;
  const runs = durations.map((d, i) => {
    const last = i === durations.length - 1;
    const r: ReportRun = { stepId: id, state: STATES[i], attempt: 1, startUs: t, finishUs: t + d * S, outcome: fail && last ? 'failed' : 'ok', details: fail && last ? 'boom' : '' };
    t += d * S;
    return r;
  });
  const state = fail ? 'failed' : durations.length === STATES.length ? 'complete' : STATES[durations.length];
  return { step: { id, cloud, stage, state, details: fail ? `${STATES[durations.length - 1]}: boom` : '', attempt: 1 }, runs };
}

describe('buildReport', () => {
  test('a lane per subcloud, a segment per run, the failures with the state they failed in', () => {
    const a = walk(1, 's1', 1, 0, [1, 2, 3]);
    const b = walk(2, 's2', 1, 1, [1, 1], true);
    const c = walk(3, 's3', 1, 2, [1]);
    c.step.state = 'b';
    const m = buildReport(input([a.step, b.step, c.step], [...a.runs, ...b.runs, ...c.runs]));
    expect(m.counts).toEqual({ initial: 0, 'in progress': 1, complete: 1, failed: 1, deferred: 0, aborted: 0 });
    expect(m.stages[0].perLane).toBe(1);
    expect(m.stages[0].lanes.map((l) => [l.label, l.count, l.finalState, l.segments.length])).toEqual([
      ['s1', 1, 'complete', 3],
      ['s2', 1, 'failed', 2],
      ['s3', 1, 'b', 1],
    ]);
    expect(m.stages[0].lanes[1].segments[1]).toMatchObject({ state: 'b', outcome: 'failed', startUs: T0 + 2 * S, endUs: T0 + 3 * S });
    expect(m.failures).toEqual([{ cloud: 's2', stage: 1, state: 'b', details: 'b: boom', attempt: 1, atUs: T0 + 3 * S }]);
    expect([m.startUs, m.endUs]).toEqual([T0, T0 + 6 * S]);
    expect(m.slowest[0]).toEqual({ cloud: 's1', stage: 1, ms: 6000, state: 'complete' });
  });

  test('a run still going is drawn up to the time of the report', () => {
    const a = walk(1, 's1', 1, 0, [1]);
    a.runs.push({ stepId: 1, state: 'b', attempt: 1, startUs: T0 + S, finishUs: null, outcome: 'running', details: '' });
    a.step.state = 'b';
    const m = buildReport(input([a.step], a.runs));
    expect(m.stages[0].lanes[0].segments[1]).toMatchObject({ outcome: 'running', endUs: T0 + 100 * S });
    expect(m.counts['in progress']).toBe(1);
  });

  test('more steps than lanes: lanes of several subclouds that cover every step once', () => {
    const walks = Array.from({ length: 10 }, (_, i) => walk(i + 1, `s${i + 1}`, 1, i, [1, 1, 1], i === 4));
    const m = buildReport(input(walks.map((w) => w.step), walks.flatMap((w) => w.runs), undefined, { maxLanesPerStage: 4 }));
    const st = m.stages[0];
    expect(st.perLane).toBe(3);
    expect(st.lanes.map((l) => [l.label, l.count, l.failed, l.finalState])).toEqual([
      ['s1 … s3', 3, 0, 'complete'],
      ['s4 … s6', 3, 1, 'failed'],
      ['s7 … s9', 3, 0, 'complete'],
      ['s10', 1, 0, 'complete'],
    ]);
    // The failure is marked where it happened; every slice says how busy the lane was.
    expect(st.lanes[1].failuresAt).toEqual([T0 + 7 * S]);
    for (const lane of st.lanes) for (const seg of lane.segments) expect(seg.share).toBeGreaterThan(0);
    expect(st.lanes[0].segments[0].state).toBe('a');
  });

  test('many stages share the budget of lanes, in proportion to their size', () => {
    const walks = Array.from({ length: 300 }, (_, i) => walk(i + 1, `s${i + 1}`, (i % 3) + 1, i, [1]));
    const stages = [1, 2, 3].map((stage) => ({ stage, window: 5, group: `g${stage}` }));
    const m = buildReport(input(walks.map((w) => w.step), walks.flatMap((w) => w.runs), stages, { maxTotalLanes: 60 }));
    expect(m.stages.map((s) => [s.steps, s.perLane, s.lanes.length, s.lanes.reduce((n, l) => n + l.count, 0)])).toEqual([
      [100, 5, 20, 100],
      [100, 5, 20, 100],
      [100, 5, 20, 100],
    ]);
  });

  test('durations per state: ok runs, failures, percentiles, a histogram of every ok run', () => {
    const walks = Array.from({ length: 10 }, (_, i) => walk(i + 1, `s${i + 1}`, 1, 0, [i + 1, 2]));
    walks.push(walk(11, 's11', 1, 0, [1, 5], true));
    const m = buildReport(input(walks.map((w) => w.step), walks.flatMap((w) => w.runs)));
    const a = m.durations.find((d) => d.state === 'a')!;
    expect([a.count, a.failed, a.minMs, a.p50Ms, a.p90Ms, a.maxMs]).toEqual([11, 0, 1000, 5000, 9000, 10_000]);
    expect(a.histogram.reduce((x, y) => x + y, 0)).toBe(11);
    const b = m.durations.find((d) => d.state === 'b')!;
    expect([b.count, b.failed, b.meanMs]).toEqual([10, 1, 2000]);
    expect(m.durations.map((d) => d.state)).toEqual(['a', 'b']);
  });

  test('a stage not started yet has no span and a lane per waiting subcloud', () => {
    const m = buildReport(input([{ id: 1, cloud: 's1', stage: 1, state: 'initial', details: '', attempt: 0 }], []));
    expect(m.stages[0]).toMatchObject({ startUs: null, endUs: null, steps: 1 });
    expect(m.durations).toEqual([]);
    expect(m.failures).toEqual([]);
  });
});

describe('events on the timeline', () => {
  const ev = (atS: number, event: string) => ({ atUs: T0 + atS * S, event, user: 'u', host: 'h', pid: 1, details: '' });

  test('each on one stage: the one running then; between stages the next; before the first the first; after the last the last', () => {
    const a = walk(1, 's1', 1, 0, [1, 1, 1]); // stage 1: 0 .. 3 s
    const b = walk(2, 's2', 2, 5, [1, 1, 1]); // stage 2: 5 .. 8 s
    const stages = [{ stage: 1, window: 1, group: 'g' }, { stage: 2, window: 1, group: 'g' }];
    const events = [ev(-1, 'apply started'), ev(2, 'paused'), ev(4, 'updated'), ev(6, 'resumed'), ev(9, 'apply ended')];
    const m = buildReport(input([a.step, b.step], [...a.runs, ...b.runs], stages, { events }));
    expect(m.events.map((e) => [e.event, e.stage])).toEqual([
      ['apply started', 1],
      ['paused', 1],
      ['updated', 2],
      ['resumed', 2],
      ['apply ended', 2],
    ]);
  });

  test('no stage has run yet: the events are kept, on no stage', () => {
    const m = buildReport(input([{ id: 1, cloud: 's1', stage: 1, state: 'initial', details: '', attempt: 0 }], [], undefined, { events: [ev(0, 'updated')] }));
    expect(m.events.map((e) => e.stage)).toEqual([null]);
  });
});
