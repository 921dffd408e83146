/** The runs a post-mortem reads (pure): failed runs and whether a retry recovered them; each site's attempts. */
import { describe, expect, test } from '@jest/globals';
import { failedRuns, siteAttempts } from '../../src/domain/report-runs.js';
import type { ReportRun, ReportStep } from '../../src/domain/report.js';

const S = 1_000_000;
const T0 = 1_700_000_000 * S;
const step = (id: number, cloud: string, state: string): ReportStep => ({ id, cloud, stage: 1, state, details: '', attempt: 1 });
const run = (stepId: number, state: string, attempt: number, at: number, outcome: string, details = ''): ReportRun => ({
  stepId,
  state,
  attempt,
  startUs: T0 + at * S,
  finishUs: outcome === 'running' ? null : T0 + (at + 1) * S,
  outcome,
  details,
});

describe('failedRuns', () => {
  const steps = [step(1, 's1', 'complete'), step(2, 's2', 'failed'), step(3, 's3', 'b')];
  const runs = [
    run(1, 'a', 1, 0, 'ok'),
    run(1, 'b', 1, 1, 'failed', 'exit 3: quota'),
    run(1, 'b', 2, 2, 'ok'),
    run(2, 'a', 1, 0, 'timeout', 'timed out after 1s'),
    run(2, 'a', 2, 2, 'failed', 'exit 1: no'),
    run(3, 'a', 1, 0, 'ok'),
    run(3, 'b', 1, 1, 'interrupted'),
    run(3, 'b', 2, 3, 'running'),
  ];

  test('every run that did not end ok, in the order they started; recovered by the later ok run of its state', () => {
    expect(failedRuns(steps, runs).map((r) => [r.cloud, r.state, r.attempt, r.outcome, r.details, r.recoveredBy, r.stepState])).toEqual([
      ['s1', 'b', 1, 'failed', 'exit 3: quota', { attempt: 2, atUs: T0 + 3 * S }, 'complete'],
      ['s2', 'a', 1, 'timeout', 'timed out after 1s', null, 'failed'],
      ['s2', 'a', 2, 'failed', 'exit 1: no', null, 'failed'],
      // A run going again is no recovery yet.
      ['s3', 'b', 1, 'interrupted', '', null, 'b'],
    ]);
  });

  test('an ok run of another state, or an earlier attempt, recovers nothing', () => {
    const r = failedRuns([step(1, 's1', 'failed')], [run(1, 'a', 2, 0, 'ok'), run(1, 'b', 1, 0, 'ok'), run(1, 'a', 3, 1, 'failed')]);
    expect(r.map((x) => x.recoveredBy)).toEqual([null]);
  });
});

describe('siteAttempts', () => {
  test("per site in step order, its runs of each state in the order it first ran them, outcomes by attempt; eventful when a state ran twice or a run did not end ok", () => {
    const steps = [step(1, 's1', 'complete'), step(2, 's2', 'complete'), step(3, 's3', 'initial')];
    const runs = [run(1, 'a', 1, 0, 'ok'), run(2, 'a', 1, 0, 'ok'), run(1, 'b', 2, 5, 'ok'), run(1, 'b', 1, 1, 'failed'), run(2, 'b', 1, 1, 'ok')];
    expect(siteAttempts(steps, runs)).toEqual([
      { cloud: 's1', stage: 1, stepState: 'complete', runs: 3, eventful: true, states: [{ state: 'a', runs: 1, outcomes: ['ok'] }, { state: 'b', runs: 2, outcomes: ['failed', 'ok'] }] },
      { cloud: 's2', stage: 1, stepState: 'complete', runs: 2, eventful: false, states: [{ state: 'a', runs: 1, outcomes: ['ok'] }, { state: 'b', runs: 1, outcomes: ['ok'] }] },
      { cloud: 's3', stage: 1, stepState: 'initial', runs: 0, eventful: false, states: [] },
    ]);
  });
});
