/**
 * Every commit a busy point (issue 14): with DCM_TEST_HOOKS=1, DCM_BUSY_AT_COMMIT=N:SECONDS makes
 * the orchestrator's Nth commit find the file busy for SECONDS (another connection holds a write
 * lock). The scenario of test/helpers/scenario.ts, with s12's pre check aborting the strategy, held
 * busy 3 s at five points spread from its first commit to past its last (every N under
 * DCM_BIG_TESTS=1, its last commit found first with the crash hook: the smallest N whose crash
 * point is never reached). At each: the
 * scenario's exit (3, aborted) and no error, no lost request (the pause, the resume, the window
 * change and the abort all took effect), never a start after a stop (a step the abort found not
 * started never runs), and the run log's rules (no overlap, no (subcloud, state) exited 0 twice,
 * the window never exceeded).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm } from '../helpers/cli.js';
import { liveMarked } from '../helpers/exec.js';
import { killLeftovers, steps, strategyState } from '../helpers/history.js';
import { apply, execProblems, execScenario, hooks, noneLeft, refusedWithoutHooks, SMALLER, type Scenario } from '../helpers/scenario.js';

const BIG = !!process.env.DCM_BIG_TESTS;
const HOLD_S = 3;

let s: Scenario;
beforeAll(() => {
  s = execScenario('s12');
});
afterAll(() => s.f.cleanup());
afterEach(() => killLeftovers());

let probe = 0;
/** The event record, one line (what the operator commands of the state commands did). */
const events = (db: string) => dcm(['--db', db, 'strategy', 'events', '-f', 'value', '-c', 'event']).stdout.trim().split('\n').join(', ');
const envFor = (db: string) => ({ ...s.f.env, RUNS: path.join(path.dirname(db), 'runs.log') });

/** Whether the scenario's apply reaches its Nth commit (it SIGKILLs itself there). */
async function reaches(n: number): Promise<boolean> {
  const db = s.fresh(10_000 + probe++);
  const r = await apply(db, { ...envFor(db), ...hooks({ DCM_CRASH_AFTER_COMMIT: String(n) }) });
  // The probe is not resumed: what its crash left running goes now.
  await s.f.killAll();
  return r.signal === 'SIGKILL';
}

/** The scenario's number of commits: the largest N it reaches (0 if it reaches none). */
async function lastCommit(): Promise<number> {
  if (!await reaches(1)) return 0;
  let lo = 1;
  let hi = 8;
  while (await reaches(hi)) {
    lo = hi;
    hi *= 2;
    if (hi > 100_000) throw new Error('the scenario reaches commit 100000: endless?');
  }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (await reaches(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * The scenario's number of commits, read from one apply's counters (DCM_COUNTERS): every commit of
 * its connection, so at least the orchestrator's that the busy hook numbers. An upper bound is
 * what the spread needs; the exact last commit (lastCommit) costs a dozen applies.
 */
async function commitsAtMost(): Promise<number> {
  const db = s.fresh(20_000);
  const file = path.join(path.dirname(db), 'counters.json');
  await apply(db, { ...envFor(db), ...hooks({ DCM_COUNTERS: file }) });
  await s.f.killAll();
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { commits: number }).commits;
}

/** Under `npm test`, this many points spread over the commits; under `npm run test:big`, every one. */
const POINTS = 5;

describe('busy points', () => {
  test('DCM_BUSY_AT_COMMIT without DCM_TEST_HOOKS is refused (exit 2)', () => {
    const db = s.fresh(0);
    const r = refusedWithoutHooks(db, 'DCM_BUSY_AT_COMMIT', `1:${HOLD_S}`);
    expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(/DCM_TEST_HOOKS/)]);
    expect(strategyState(db)).toBe('initial');
  });

  // Five commits under `npm test`, from the first to past the last (the simulator holds the store
  // busy at commits of every kind on every schedule), every one under `npm run test:big`. (A double run this loop
  // once reported was the run log's, not dcm's: a timeout's kill that came as s3's run logged its
  // end made it log twice, 0 then TERM; see seam.sh and finishedRuns in the helpers.)
  test(`${BIG ? 'every commit' : `${POINTS} commits from the first to past the last`} held busy ${HOLD_S} s: the scenario's exit, no lost request, no start after a stop`, async () => {
    const last = BIG ? await lastCommit() : await commitsAtMost();
    // Commit counts vary a little from run to run (batches): go a little past the end.
    const end = last + Math.ceil(last / 10) + 1;
    const K = BIG ? 1 : Math.max(1, Math.floor((end - 1) / (POINTS - 1)));
    const covered: number[] = [];
    const failures: string[] = [];
    const point = async (n: number) => {
      const db = s.fresh(n);
      // Its own mark: its leftovers are told apart from those of the point that runs beside it.
      const mark = `${s.f.env.EXECTEST_MARK}-${n}`;
      const env = { ...envFor(db), EXECTEST_MARK: mark, APPLY_ERR: path.join(path.dirname(db), 'apply.err') };
      const r = await apply(db, { ...env, ...hooks({ DCM_BUSY_AT_COMMIT: `${n}:${HOLD_S}` }) });
      covered.push(n);
      const at = `N=${n}`;
      if (r.signal !== null || r.code !== 3) failures.push(`${at}: exit ${r.code ?? r.signal}: ${r.stderr.slice(-400)}`);
      if (/error:/.test(r.stderr)) failures.push(`${at}: ${r.stderr.split('\n').filter((l) => /error:/.test(l)).join('; ')}`);
      // Each request from the state commands took effect.
      for (const [what, re] of [
        ['pause', /paused: no new subcloud starts/],
        ['resume', /^dcm: resumed$/m],
        ['window change', new RegExp(`window of stage 1: ${SMALLER}\\b`)],
        ['abort', /abort requested: /],
      ] as [string, RegExp][]) {
        if (!re.test(r.stderr)) failures.push(`${at}: the ${what} was not seen (events: ${events(db)})`);
      }
      if (strategyState(db) !== 'aborted') failures.push(`${at}: strategy ${strategyState(db)}`);
      // The abort came while later subclouds had not started: it aborted them.
      if (!steps(db).some((st) => st.state === 'aborted')) failures.push(`${at}: no step aborted`);
      failures.push(...(await execProblems(env.RUNS, db, true)).map((p) => `${at}: ${p}`));
      const left = await noneLeft({ leftovers: () => liveMarked(mark) });
      if (left.length) failures.push(`${at}: ${left.length} process(es) left`);
    };
    // Two points at once, each on its own file: a point mostly waits (the hold, the runs), and the
    // loop is in every `npm test`. The first failure stops new points.
    const points: number[] = [];
    for (let n = 1; n <= end && last > 0; n += K) points.push(n);
    const next = async (): Promise<void> => {
      const n = points.shift();
      if (n === undefined || failures.length) return;
      await point(n);
      return next();
    };
    await Promise.all([next(), next()]);
    covered.sort((a, b) => a - b);
    console.log(`busy points: ${covered.length} covered (N = ${covered.join(', ')}; commits 1..${last}${BIG ? '' : ' at most'}, held ${HOLD_S} s)`);
    expect(failures).toEqual([]);
    expect(last).toBeGreaterThan(0);
  }, 3_600_000);
});
