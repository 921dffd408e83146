/** The progress tracker and its text (pure): counts, in flight, ETA, failures, width, summary. */
import { realRuntime } from '../../src/platform/runtime.js';
import { describe, expect, test } from '@jest/globals';
import { ProgressTracker } from '../../src/orchestrator/progress-tracker.js';
import { closingSummary, liveLines, periodicLine, withCounts } from '../../src/orchestrator/progress-view.js';
import { LiveProgress } from '../../src/orchestrator/progress-live.js';
import { LineProgress } from '../../src/orchestrator/progress.js';
import { EventEmitter } from 'node:events';
import type { TransitionEvent } from '../../src/orchestrator/progress.js';

const STATES = ['a', 'b'];
const ev = (cloud: string, from: string, to: string, extra: Partial<TransitionEvent> = {}): TransitionEvent => ({
  at: '2026-01-01 00:00:00.000000',
  cloud,
  from,
  to,
  details: '',
  stage: 1,
  ended: to === 'complete' || to === 'failed' || to === 'aborted',
  ...extra,
});

function started(n: number, fallbackMs: number | null = null) {
  const t = new ProgressTracker({ fallbackMs });
  t.begin({ type: 'patch', states: STATES, stages: [{ stage: 1, window: 2, counts: { initial: n } }], startedMs: 0, stateTimeoutMs: 1000 });
  t.stageStarted(1, 2);
  return t;
}

describe('ProgressTracker', () => {
  test('progress lines of subclouds in flight show under "latest progress", newest last; a transition or an end clears its own', () => {
    const t = started(3);
    t.transition(ev('s1', 'initial', 'a', { attempt: 1 }), 0);
    t.transition(ev('s2', 'initial', 'a', { attempt: 1 }), 0);
    t.details('s1', 'apply phase is 40% complete');
    t.details('s2', 'apply phase is 10% complete');
    t.details('s1', 'apply phase is 60% complete');
    // Not in flight: a line for it is not shown.
    t.details('s3', 'stray');
    expect(t.snapshot(10).progress).toEqual([
      { cloud: 's2', details: 'apply phase is 10% complete' },
      { cloud: 's1', details: 'apply phase is 60% complete' },
    ]);
    const lines = liveLines(t.snapshot(10), 120);
    expect(lines.slice(lines.indexOf('latest progress:'))).toEqual(['latest progress:', '  s2: apply phase is 10% complete', '  s1: apply phase is 60% complete']);
    t.transition(ev('s1', 'a', 'b', { attempt: 1, durationMs: 10 }), 10);
    t.transition(ev('s2', 'a', 'failed', { details: 'a: boom', durationMs: 10 }), 10);
    expect(t.snapshot(20).progress).toEqual([]);
    expect(liveLines(t.snapshot(20), 120)).not.toContain('latest progress:');
  });

  test('groups waiting for their maintenance window show under "waiting for maintenance window" until it opens, or an abort', () => {
    const t = started(3);
    t.windowWait('night', 'night Sat 22:00-Sun 06:00 (UTC) opens 2026-12-05T22:00:00.000Z');
    t.windowWait('edge', 'edge 22:00-06:00 (Europe/Berlin) opens 2026-12-01T21:00:00.000Z');
    const lines = liveLines(t.snapshot(10), 120);
    expect(lines.slice(lines.indexOf('waiting for maintenance window:'))).toEqual([
      'waiting for maintenance window:',
      '  night Sat 22:00-Sun 06:00 (UTC) opens 2026-12-05T22:00:00.000Z',
      '  edge 22:00-06:00 (Europe/Berlin) opens 2026-12-01T21:00:00.000Z',
    ]);
    t.windowWait('night', null);
    expect(t.snapshot(20).windowWaits).toEqual(['edge 22:00-06:00 (Europe/Berlin) opens 2026-12-01T21:00:00.000Z']);
    t.initialAborted();
    expect(liveLines(t.snapshot(30), 120)).not.toContain('waiting for maintenance window:');
  });

  test('one of several workers: the store counts replace its own, its next transitions move on from them, and the view counts workers', () => {
    const t = started(10);
    t.transition(ev('s1', 'initial', 'a', { attempt: 1 }), 0);
    expect(liveLines(t.snapshot(10), 120)[4]).toMatch(/^1 in flight, /);
    // Two other workers completed 4 and hold 3 in flight; this one holds s1.
    t.fleet({ workers: 3, inFlightElsewhere: 3, counts: [{ stage: 1, state: 'initial', n: 2 }, { stage: 1, state: 'a', n: 4 }, { stage: 1, state: 'complete', n: 4 }] });
    t.transition(ev('s1', 'a', 'b', { attempt: 1, durationMs: 10 }), 10);
    const s = t.snapshot(20);
    expect([s.total, s.ended, s.counts.initial, s.counts.inProgress, s.byState]).toEqual([10, 4, 2, 4, [['a', 3], ['b', 1]]]);
    expect(liveLines(s, 120)[4]).toMatch(/^3 workers: 1 in flight here, 3 elsewhere, /);
    expect(periodicLine(s)).toMatch(/: 4\/10 done \(4 complete, .*\), 3 workers: 1 in flight here, 3 elsewhere, /);
  });

  test('counts per state, in flight, failures and an ETA from the durations seen', () => {
    const t = started(4);
    t.transition(ev('s1', 'initial', 'a', { attempt: 1 }), 0);
    t.transition(ev('s2', 'initial', 'a', { attempt: 1 }), 0);
    t.transition(ev('s1', 'a', 'b', { attempt: 1, durationMs: 100 }), 100);
    t.transition(ev('s2', 'a', 'failed', { details: 'a: boom', durationMs: 100 }), 100);
    t.transition(ev('s3', 'initial', 'a', { attempt: 1 }), 100);
    let s = t.snapshot(100);
    expect(s.counts).toEqual({ initial: 1, inProgress: 2, complete: 0, failed: 1, deferred: 0, aborted: 0 });
    expect(s.byState).toEqual([['a', 1], ['b', 1]]);
    expect([s.inFlight, s.total, s.ended, s.stage, s.window]).toEqual([2, 4, 1, 1, 2]);
    expect(s.failures).toEqual([{ cloud: 's2', details: 'a: boom' }]);
    // State b was never seen and there is no fallback: unknown.
    expect([s.etaMs, s.etaSource]).toEqual([null, 'unknown']);

    t.transition(ev('s1', 'b', 'complete', { durationMs: 300 }), 400);
    s = t.snapshot(1000);
    expect(s.etaSource).toBe('observed');
    // s3 has run 'a' (mean 100) for 900 ms: only b (300) left; s4 then takes a free slot: 400.
    expect(s.etaMs).toBe(400);
    expect(s.rate).toBeCloseTo(2, 5); // 2 ended in 1 s

    t.initialAborted();
    s = t.snapshot(2000);
    expect(s.state).toBe('aborting');
    expect(s.counts.aborted).toBe(1);
    expect(s.counts.initial).toBe(0);
  });

  test('paused and resumed, a window changed: the live view says so', () => {
    const t = started(4);
    t.paused(true);
    let s = t.snapshot(0);
    expect(s.state).toBe('paused');
    expect(liveLines(s, 80)[0]).toMatch(/strategy paused/);
    t.windowChanged(1, 7);
    t.paused(false);
    s = t.snapshot(0);
    expect([s.state, s.window]).toEqual(['applying', 7]);
  });

  test('paused: the ETA stays as it was (the time once resumed) instead of counting down with the clock', () => {
    const t = started(4, 50);
    expect(t.snapshot(0).etaMs).toBe(200); // 2 waves of 2 × 50 ms
    t.paused(true);
    for (const at of [0, 300, 499, 5000]) expect(t.snapshot(at).etaMs).toBe(200);
    // What only the operator ends is said so (issue 49), in the words of `strategy status`.
    expect(liveLines(t.snapshot(600), 120)[4]).toMatch(/, ETA waits for the operator \(paused\): 200ms \(from sim latency\) once resumed$/);
    expect(periodicLine(t.snapshot(600))).toMatch(/, ETA waits for the operator \(paused\): 200ms \(from sim latency\) once resumed$/);
    // An event while paused (a subcloud in flight ends) moves it at once, not after the cache's 500 ms.
    const p = started(3, 50);
    p.transition(ev('s1', 'initial', 'a', { attempt: 1 }), 0);
    p.paused(true);
    expect(p.snapshot(10).etaMs).toBe(190); // s1 has 90 ms left; s3 takes its slot after it: 90 + 100
    p.transition(ev('s1', 'a', 'b', { attempt: 1, durationMs: 50 }), 50);
    p.transition(ev('s1', 'b', 'complete', { durationMs: 50 }), 100);
    expect(p.snapshot(110).etaMs).toBe(100); // s2 and s3 side by side: 2 × 50 ms
    // Resumed, it counts down again.
    t.paused(false);
    expect(t.snapshot(6000).etaMs).toBe(200);
    expect(t.snapshot(6300).etaMs).toBe(0);
  });

  test('elapsed counts from the strategy\'s first start, not from this process\'s (a resume); the rate is this run\'s', () => {
    const t = new ProgressTracker();
    t.begin({ type: 'patch', states: STATES, stages: [{ stage: 1, window: 2, counts: { initial: 2 } }], startedMs: 10_000, firstStartedMs: 1_000, stateTimeoutMs: 1000 });
    t.transition(ev('s1', 'initial', 'a', { attempt: 1 }), 10_000);
    t.transition(ev('s1', 'a', 'complete', { durationMs: 1000 }), 11_000);
    const s = t.snapshot(12_000);
    expect(s.elapsedMs).toBe(11_000);
    expect(s.rate).toBeCloseTo(0.5, 5); // 1 ended in this run's 2 s
    expect(liveLines(s, 120)[4]).toMatch(/elapsed 11s/);
  });

  test('the fallback gives an estimate before any duration is seen', () => {
    const t = started(5, 50);
    const s = t.snapshot(0);
    expect([s.etaMs, s.etaSource]).toEqual([300, 'sim']); // ceil(5 / 2) waves of 2 × 50 ms
  });
});

/** A terminal that keeps what is written to it. */
function fakeTerminal(): NodeJS.WriteStream & { text: () => string } {
  const chunks: string[] = [];
  const out = Object.assign(new EventEmitter(), {
    isTTY: true,
    columns: 120,
    rows: 40,
    write: (c: string | Uint8Array) => (chunks.push(String(c)), true),
    text: () => chunks.join(''),
  });
  return out as unknown as NodeJS.WriteStream & { text: () => string };
}

describe('the live view\'s last frame', () => {
  test('a strategy ended by its failure budget (exec: no sim latency, states never run): no ETA, no source', () => {
    const out = fakeTerminal();
    const live = new LiveProgress(out, {}, realRuntime());
    live.begin({ type: 'custom', states: STATES, stages: [{ stage: 1, window: 1, counts: { initial: 3 } }], startedMs: Date.now(), stateTimeoutMs: 1000 });
    live.stageStarted(1, 1);
    live.transition(ev('s1', 'initial', 'a', { attempt: 1 }));
    live.transition(ev('s1', 'a', 'failed', { details: 'a: exit 1: boom', durationMs: 5 }));
    live.summary({ state: 'failed', counts: { failed: 3 }, durationMs: 20, peakInFlight: 1, maxWindow: 1, failures: [], failedTotal: 3 });
    const last = out.text().split('strategy failed').at(-2)!;
    expect(last).toMatch(/\d+ in flight, [\d.]+\/s, elapsed \S+\n/);
    expect(last).not.toMatch(/ETA|sim latency/);
  });
});

describe('progress text', () => {
  test('the live view fits the width; the periodic line and the summary', () => {
    const t = started(3);
    t.transition(ev('a-subcloud-with-a-rather-long-name', 'initial', 'a', { attempt: 1 }), 0);
    t.transition(ev('a-subcloud-with-a-rather-long-name', 'a', 'failed', { details: 'a: ' + 'x'.repeat(200) }), 10);
    const s = t.snapshot(10);
    for (const w of [40, 80, 200]) {
      const lines = liveLines(s, w);
      expect(lines.every((l) => l.length < w)).toBe(true);
      expect(lines[1]).toMatch(/^\[[#-]+\] 1\/3 done 33%$/);
    }
    expect(periodicLine(s)).toMatch(/^progress: stage 1 of 1 \(window 2\): 1\/3 done \(0 complete, 1 failed, 0 aborted, 0 in progress, 2 initial\), 0 in flight, /);

    const failures = Array.from({ length: 20 }, (_, i) => ({ cloud: `s${i}`, details: 'a: boom' }));
    const text = closingSummary({ state: 'failed', counts: { complete: 5, failed: 23 }, durationMs: 1500, peakInFlight: 2, maxWindow: 2, failures, failedTotal: 23 });
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe('strategy failed: 5 complete, 23 failed in 1.5s (peak 2 subclouds in flight, window 2)');
    expect(lines[1]).toBe('failed subclouds (23):');
    expect(lines).toHaveLength(23);
    expect(lines[22]).toBe('  ... and 3 more: dcm strategy-step list --state failed');
    expect(closingSummary({ state: 'complete', counts: { complete: 2 }, durationMs: 10, peakInFlight: 1, maxWindow: 1, failures: [], failedTotal: 0 })).toBe(
      'strategy complete: 2 complete in 10ms (peak 1 subclouds in flight, window 1)\n',
    );
    // After a resume (or a retry), this apply's time is named as such, beside the time since the first start.
    // A worker that joined late and got no subcloud: no "peak 0 subclouds in flight, window 0".
    expect(closingSummary({ state: 'complete', counts: { complete: 4 }, durationMs: 10, peakInFlight: 0, maxWindow: 0 })).toBe(
      'strategy complete: 4 complete in 10ms (no subcloud started in this apply)\n',
    );
    expect(closingSummary({ state: 'complete', counts: { complete: 2 }, durationMs: 10, sinceFirstStartMs: 65_000, peakInFlight: 1, maxWindow: 1 })).toBe(
      'strategy complete: 2 complete in 10ms of this apply, 1m05s since the first start (peak 1 subclouds in flight, window 1)\n',
    );
  });
});

describe('the last frame (issue 49)', () => {
  // A worker that joined others saw their steps end only at heartbeats: its last frame read
  // `complete … 0/3 done, 3 in progress`. It now has the store's counts, the closing summary's.
  test("a joined worker's last frame has the strategy's counts as it ended, not its own view's", () => {
    const t = started(3);
    const stale = t.snapshot(100);
    expect(stale.counts.inProgress + stale.counts.initial).toBe(3);
    const last = withCounts({ ...stale, state: 'complete' }, { complete: 3 });
    expect(liveLines(last, 120).slice(1, 3)).toEqual(['[##################################################] 3/3 done 100%', '3 complete, 0 failed, 0 aborted, 0 in progress, 0 initial']);
  });
});

describe('the line progress on a stream many applies share', () => {
  // `subcloud prestage` and the tests run applies in one process, on its one stderr: each apply
  // added an 'error' listener to it, and Node warned of a leak at the eleventh.
  test('one error listener however many progress sinks, and a failed stream silences them all', () => {
    const out = Object.assign(new EventEmitter(), { text: '', write: (c: string) => ((out.text += c), true) });
    const sinks = Array.from({ length: 12 }, () => new LineProgress(out as unknown as NodeJS.WritableStream, { quiet: false, verbose: false, intervalMs: 0, inputs: {} }, realRuntime()));
    expect(out.listenerCount('error')).toBe(1);
    sinks[11].warn('before');
    expect(out.text).toBe('dcm: before\n');
    out.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    for (const p of sinks) p.warn('after');
    expect(out.text).toBe('dcm: before\n');
  });
});
