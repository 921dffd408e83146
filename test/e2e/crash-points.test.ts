/**
 * Every commit a crash point (issue 14): with DCM_TEST_HOOKS=1, DCM_CRASH_AFTER_COMMIT=N makes
 * the apply SIGKILL itself right after the orchestrator's Nth commit. For the scenario of
 * test/helpers/scenario.ts (20 subclouds, a retry, a timeout, `$DCM_NEXT` skips, a pause and
 * resume and a window change made by the state commands themselves), N = 1, 1+K, 1+2K, …: a fresh
 * copy of the database, apply with the crash at N, then plain applies until one exits; the loop
 * ends at the first N past the last commit (the apply exits by itself). Judged by the state
 * commands' own log (no overlap per subcloud, no (subcloud, state) exited 0 twice, the window never
 * exceeded), the final steps, and no process left. The same loop with the sim driver, judged by
 * the simulated sites. K is 1 under DCM_BIG_TESTS=1.
 *
 * Under `npm test` the exec loop takes every 40th commit, and the sim driver's loop runs only under
 * `npm run test:big`: the simulator (test/sim) kills an apply after every kind of commit on every
 * schedule, in seconds; what only real processes show (the launcher, pid and status files) stays here.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { killLeftovers } from '../helpers/history.js';
import { apply, applyUntilDone, execProblems, execScenario, hooks, noneLeft, refusedWithoutHooks, simProblems, simScenario, type Scenario } from '../helpers/scenario.js';

const BIG = !!process.env.DCM_BIG_TESTS;
/** The most points a loop tries before it calls the scenario endless. */
const MAX_N = 5000;

afterEach(() => killLeftovers());

describe('crash points: the hooks', () => {
  let s: Scenario;
  beforeAll(() => {
    s = execScenario();
  });
  afterAll(() => s.f.cleanup());

  test('DCM_CRASH_AFTER_COMMIT without DCM_TEST_HOOKS is refused (exit 2), and nothing is applied', () => {
    const db = s.fresh(0);
    const r = refusedWithoutHooks(db, 'DCM_CRASH_AFTER_COMMIT', '1');
    expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(/DCM_TEST_HOOKS/)]);
  });

  test('DCM_CRASH_AFTER_COMMIT=1 with DCM_TEST_HOOKS=1: the apply SIGKILLs itself', async () => {
    const db = s.fresh(1);
    const r = await apply(db, { ...s.f.env, RUNS: path.join(path.dirname(db), 'runs.log'), ...hooks({ DCM_CRASH_AFTER_COMMIT: '1' }) });
    expect([r.signal, r.code]).toEqual(['SIGKILL', null]);
  }, 120_000);
});

describe('crash points: every Kth commit of the scenario', () => {
  test('exec driver: crash at N, resume until it exits; judged by the run log, the steps, no process left', async () => {
    const s = execScenario();
    const K = BIG ? 1 : 40;
    const covered: number[] = [];
    const failures: string[] = [];
    try {
      for (let n = 1; n < MAX_N; n += K) {
        const db = s.fresh(n);
        const runs = path.join(path.dirname(db), 'runs.log');
        const env = { ...s.f.env, RUNS: runs };
        const first = await apply(db, { ...env, ...hooks({ DCM_CRASH_AFTER_COMMIT: String(n) }) });
        if (first.signal === null) {
          // Past the last commit: the loop is over. This apply must have ended as the scenario does.
          if (first.code !== 0) failures.push(`N=${n} (no crash): exit ${first.code}: ${first.stderr.slice(-500)}`);
          failures.push(...(await execProblems(runs, db)).map((p) => `N=${n} (no crash): ${p}`));
          break;
        }
        if (first.signal !== 'SIGKILL') failures.push(`N=${n}: ended by ${first.signal}`);
        covered.push(n);
        const last = await applyUntilDone(db, env);
        if (last.code !== 0) failures.push(`N=${n}: resumed ${last.tries} time(s), last exit ${last.code}: ${last.stderr.slice(-500)}`);
        failures.push(...(await execProblems(runs, db)).map((p) => `N=${n}: ${p}`));
        const left = await noneLeft(s.f);
        if (left.length) failures.push(`N=${n}: ${left.length} process(es) left`);
        if (failures.length) break;
      }
    } finally {
      s.f.cleanup();
    }
    console.log(`crash points (exec): ${covered.length} covered (every ${K === 1 ? '' : `${K}th `}commit, N = ${covered[0] ?? '-'}..${covered.at(-1) ?? '-'})`);
    expect(failures).toEqual([]);
    // N = 1 is before the scenario's end: at least it must have crashed.
    expect(covered.length).toBeGreaterThan(0);
  }, 1_800_000);

  (BIG ? test : test.skip)('sim driver: crash at N, resume until it exits; judged by the simulated sites (npm run test:big)', async () => {
    const s = simScenario();
    const K = BIG ? 1 : 3;
    const covered: number[] = [];
    const failures: string[] = [];
    try {
      for (let n = 1; n < MAX_N; n += K) {
        const db = s.fresh(n);
        const first = await apply(db, hooks({ DCM_CRASH_AFTER_COMMIT: String(n) }));
        if (first.signal === null) {
          if (first.code !== 1) failures.push(`N=${n} (no crash): exit ${first.code}: ${first.stderr.slice(-500)}`);
          failures.push(...simProblems(db).map((p) => `N=${n} (no crash): ${p}`));
          break;
        }
        covered.push(n);
        const last = await applyUntilDone(db, {});
        // s7 fails at its site: the strategy ends failed.
        if (last.code !== 1) failures.push(`N=${n}: resumed ${last.tries} time(s), last exit ${last.code}: ${last.stderr.slice(-500)}`);
        failures.push(...simProblems(db).map((p) => `N=${n}: ${p}`));
        if (failures.length) break;
      }
    } finally {
      s.cleanup();
    }
    console.log(`crash points (sim): ${covered.length} covered (every ${K === 1 ? '' : `${K}rd `}commit, N = ${covered[0] ?? '-'}..${covered.at(-1) ?? '-'})`);
    expect(failures).toEqual([]);
    expect(covered.length).toBeGreaterThan(0);
  }, 1_800_000);
});
