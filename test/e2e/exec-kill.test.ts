/**
 * kill -9 of dcm while exec runs are in flight (SPEC §7.2): the runs are their own process groups
 * and go on; the next apply waits for a run still going, takes the status of a run that ended
 * meanwhile, and runs again only a run that ended without one (with DCM_RESUMED=1). Judged by
 * the commands' own log: no two runs of a subcloud overlap, none runs twice.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { statesOf } from '../../src/domain/types.js';
import { BIN, dcm, sleep, waitFor } from '../helpers/cli.js';
import { history, killLeftovers, names, spawnDcm, steps } from '../helpers/history.js';
import { execFixture, overlapsPerCloud, peakConcurrent, type ExecFixture } from '../helpers/exec.js';
import { runFiles } from '../helpers/logs.js';
import { stopped } from '../helpers/workers.js';
import { dcmQuickOk } from '../helpers/quick.js';

const PATCH = statesOf('patch');
let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

/** History rows still running, with the process recorded for them. */
function runningRows(db: string): { cloud: string; state: string; attempt: number; pid: number | null; pgid: number | null }[] {
  const d = new Database(db, { readonly: true });
  try {
    return d
      .prepare(
        `SELECT sc.name AS cloud, h.state, h.attempt, h.pid, h.pgid FROM step_history h JOIN strategy_step st ON st.id = h.step_id
         JOIN subcloud sc ON sc.id = st.subcloud_id WHERE h.outcome = 'running'`,
      )
      .all() as { cloud: string; state: string; attempt: number; pid: number | null; pgid: number | null }[];
  } finally {
    d.close();
  }
}

const startedRun = (db: string) => runningRows(db).find((r) => r.pid !== null);

function setup(n: number, window: number, yaml: string): void {
  dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...names(n)]);
  dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', String(window), '--driver', 'exec', '--exec-config', f.config(yaml)]);
}

/**
 * s1's first pre check (attempt 1 sleeps) killed with everything: dcm, then the run's whole group,
 * wrapper included, as when the site goes down with it. It left no status.
 */
async function killedWithoutStatus(): Promise<void> {
  f = execFixture();
  setup(1, 1, `
states:
  pre check:
    run: '[ "$DCM_ATTEMPT" = 1 ] && sleep 1000; exec ${f.step} again'
  "*": "true"
`);
  const first = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
  await waitFor(() => startedRun(f.db) !== undefined, 20_000);
  const { pgid } = startedRun(f.db)!;
  first.child.kill('SIGKILL');
  await first.done;
  // The site went down with the run: its whole group is killed, wrapper included.
  process.kill(-pgid!, 'SIGKILL');
  await waitFor(() => f.leftovers().length === 0, 10_000);
}

describe('exec driver: kill -9 of dcm, then apply', () => {
  // Claim, README "Running real updates", kill -9 of dcm: two runs of one subcloud never overlap, nothing runs twice, no process left.
  test('SIGKILLed at random moments 10+ times: no overlap per subcloud, nothing run twice, no process left', async () => {
    f = execFixture();
    const N = 16;
    const WINDOW = 4;
    setup(N, WINDOW, `
defaults: {env: {STEP_MIN_MS: "50", STEP_MAX_MS: "300"}}
states:
  "*": [${f.step}, "{cloud}", "{state}"]
`);
    let kills = 0;
    let adopted = 0;
    // The last kill left a run recorded as running (its pid in the history): the next apply must adopt it.
    let adoptable = false;
    const missed: string[] = [];
    let code: number | null = null;
    let last = '';
    for (let round = 0; round < 60 && code !== 0; round++) {
      const run = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
      if (adoptable) {
        // Adoption is the first thing an apply does: wait for it to say so before any kill.
        const said = () => /still going or ended meanwhile/.test(run.stderr());
        await waitFor(() => said() || run.child.exitCode !== null, 30_000, 5).catch(() => undefined);
        if (said()) adopted++;
        else missed.push(`round ${round}: ${run.stderr()}`);
      }
      if (kills < 10) {
        // Until one kill has left a run to adopt, kill at a moment with one recorded (an event);
        // then at random moments.
        if (adopted === 0 && !adoptable) await waitFor(() => startedRun(f.db) !== undefined || run.child.exitCode !== null, 20_000, 5).catch(() => undefined);
        else await sleep(100 + Math.floor(Math.random() * 300));
        if (run.child.exitCode === null) {
          run.child.kill('SIGKILL');
          kills++;
        }
      }
      const r = await run.done;
      adoptable = r.signal === 'SIGKILL' && runningRows(f.db).some((x) => x.pid !== null);
      code = r.code;
      last = r.stderr;
    }
    expect(kills).toBeGreaterThanOrEqual(10);
    expect([code, steps(f.db).filter((s) => s.state !== 'complete')]).toEqual([0, []]);
    expect(last).toContain('strategy complete');
    expect(missed).toEqual([]);
    expect(adopted).toBeGreaterThan(0);

    const runs = f.readRuns();
    const keys = runs.map((x) => `${x.cloud}/${x.state}`).sort();
    const twice = keys.filter((k, i) => keys[i - 1] === k);
    const why = twice.map((k) => ({
      runs: runs.filter((x) => `${x.cloud}/${x.state}` === k),
      history: history(f.db, k.split('/')[0]).filter((h) => h.state === k.split('/')[1]),
    }));
    expect(why).toEqual([]);
    expect(keys).toEqual(names(N).flatMap((c) => PATCH.map((s) => `${c}/${s}`)).sort());
    expect(overlapsPerCloud(runs)).toEqual([]);
    expect(peakConcurrent(runs)).toBeLessThanOrEqual(WINDOW);
    expect(steps(f.db).every((s) => s.state === 'complete')).toBe(true);
    // Every ok row belongs to the run the command logged: one ok row per (cloud, state).
    const ok = history(f.db).filter((h) => h.outcome === 'ok');
    expect(ok).toHaveLength(N * PATCH.length);
    expect(f.leftovers()).toEqual([]);
  }, 120_000);

  // Claim, README "Running real updates", kill -9 of dcm: a run whose group is still alive is waited for by the next apply.
  test('a run still going is waited for, not started again', async () => {
    f = execFixture();
    setup(1, 1, `
states:
  pre check: {run: [${f.step}, slow], env: {STEP_MIN_MS: "1500"}}
  "*": [${f.step}, quick]
`);
    const first = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => startedRun(f.db) !== undefined, 20_000);
    first.child.kill('SIGKILL');
    await first.done;
    const r = dcm(['--db', f.db, 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('still going or ended meanwhile');
    const pre = f.readRuns().filter((x) => x.state === 'pre check');
    expect(pre).toHaveLength(1);
    expect(history(f.db, 's1').filter((h) => h.state === 'pre check').map((h) => [h.attempt, h.outcome])).toEqual([[1, 'ok']]);
    expect(overlapsPerCloud(f.readRuns())).toEqual([]);
  }, 60_000);

  // Claim, README "Running real updates", kill -9 of dcm: a run that exited with a status is taken with it, not run again.
  test('a run that ended while dcm was down is taken with its status, not run again', async () => {
    f = execFixture();
    setup(1, 1, `
states:
  pre check: {run: "sleep 0.4; echo broke >&2; exit 5"}
  "*": "true"
`);
    const first = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => startedRun(f.db) !== undefined, 20_000);
    first.child.kill('SIGKILL');
    await first.done;
    const status = `${await runFiles(f.db, 's1', 1, 'pre check')}.status`;
    await waitFor(() => fs.existsSync(status), 20_000);
    await sleep(100);
    const r = dcm(['--db', f.db, 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(1);
    expect(steps(f.db)[0].details).toBe('pre check: exit 5: broke');
    expect(history(f.db, 's1').map((h) => [h.attempt, h.outcome])).toEqual([[1, 'failed']]);
  }, 60_000);

  // Claim, README "Running real updates", kill -9 of dcm: a run that ended without a status runs again, as the next attempt, with DCM_RESUMED=1.
  test('a run that ended without a status runs again as the next attempt, with DCM_RESUMED=1', async () => {
    await killedWithoutStatus();
    const r = dcm(['--db', f.db, 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(0);
    expect(history(f.db, 's1').filter((h) => h.state === 'pre check').map((h) => [h.attempt, h.outcome])).toEqual([
      [1, 'interrupted'],
      [2, 'ok'],
    ]);
    expect(f.readRuns().map((x) => [x.state, x.attempt, x.resumed])).toEqual([['pre check', 2, true]]);
  }, 60_000);

  // Claim, README "Running real updates", kill -9 at any moment: a run whose taker was killed between
  // creating its `.run` and writing it runs again; the next apply never waits for it forever.
  test('a run whose `.run` was left empty (its wrapper killed between creating it and writing it) runs again as the next attempt', async () => {
    await killedWithoutStatus();
    // What a kill between the wrapper's exclusive create and its write leaves (a dcm giving the
    // run up, killed at the same point, leaves the same).
    fs.writeFileSync(`${await runFiles(f.db, 's1', 1, 'pre check')}.run`, '');
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => apply.child.exitCode !== null, 45_000).catch(() => {
      throw new Error(`the apply still waits after 45 s: ${apply.stderr()}`);
    });
    expect((await apply.done).code).toBe(0);
    expect(history(f.db, 's1').filter((h) => h.state === 'pre check').map((h) => [h.attempt, h.outcome, h.details])).toEqual([
      [1, 'interrupted', 'nothing of the run is left and it wrote no exit status'],
      [2, 'ok', ''],
    ]);
    expect(f.readRuns().map((x) => [x.state, x.attempt, x.resumed])).toEqual([['pre check', 2, true]]);
  }, 90_000);
});

/** The launcher's pid: the process of this test's runs' environment that runs launcher.js. */
function launcherOf(fx: ExecFixture): number | undefined {
  return fx.leftovers().find((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('launcher.js');
    } catch {
      return false;
    }
  });
}

describe('exec driver: the launcher', () => {
  test('is started as the apply begins, before its first runs are committed; dcm killed before it launched one, the idle launcher leaves with it', async () => {
    f = execFixture();
    setup(2, 2, `
states:
  "*": [${f.step}, run]
`);
    // Stopped right after the commit that opens the first runs, before they are launched.
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], { ...f.env, DCM_TEST_HOOKS: '1', DCM_STOP_AFTER_COMMIT: '2' });
    await waitFor(() => stopped(apply.child.pid!), 20_000);
    expect(runningRows(f.db).map((r) => [r.cloud, r.pid])).toEqual([['s1', null], ['s2', null]]);
    expect(f.readRuns()).toEqual([]);
    // Its start-up overlapped the orchestrator's own: it is there before any run is asked of it.
    expect(launcherOf(f)).toBeDefined();
    apply.child.kill('SIGKILL');
    await apply.done;
    // Its input closed, no run to see to: it exits, and no run was started.
    await waitFor(() => f.leftovers().length === 0, 20_000);
    expect(f.readRuns()).toEqual([]);
  }, 60_000);
});

describe('exec driver: the launcher killed under a running dcm', () => {
  // Claim, README "Running real updates", kill -9 of the launcher: the run in flight is waited for and its status taken.
  test('the run in flight is waited for and its exit status (written by its own wrapper) taken: it never runs again; later runs start from a new launcher', async () => {
    f = execFixture();
    setup(1, 1, `
states:
  pre check:
    run: '[ "$DCM_ATTEMPT" = 1 ] && sleep 0.8; exec ${f.step} pre'
  "*": [${f.step}, rest]
`);
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => startedRun(f.db) !== undefined, 20_000);
    const launcher = launcherOf(f);
    expect(launcher).toBeDefined();
    process.kill(Number(launcher), 'SIGKILL');
    const r = await apply.done;
    expect(r.code).toBe(0);
    const pre = history(f.db, 's1').filter((h) => h.state === 'pre check');
    expect(pre.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'ok']]);
    // The run was not killed with the launcher: it ran to its end, and its status was found.
    const runs = f.readRuns();
    expect(runs.filter((x) => x.state === 'pre check').map((x) => [x.attempt, x.resumed])).toEqual([[1, false]]);
    expect(overlapsPerCloud(runs)).toEqual([]);
    expect(runs).toHaveLength(PATCH.length);
    expect(f.leftovers()).toEqual([]);
  }, 60_000);

  // Claim, README "Running real updates": a launcher that cannot be started (node's binary removed
  // under a running dcm) fails the state it was to start, in one line; the apply never waits forever.
  test('node removed under dcm, then its launcher killed: the next state fails `cannot start`, the apply ends (exit 1)', async () => {
    f = execFixture();
    const node = path.join(f.dir, 'node');
    fs.copyFileSync(process.execPath, node);
    fs.chmodSync(node, 0o755);
    // The first state removes the node dcm runs from, then kills its launcher (its wrapper's parent).
    setup(1, 1, `
states:
  pre check: 'rm -f ${node}; kill -9 $(cut -d" " -f4 /proc/$PPID/stat); exit 0'
  "*": "true"
`);
    const apply = spawn(node, [BIN, '--db', f.db, 'strategy', 'apply'], { env: { ...process.env, ...f.env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    apply.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const done = new Promise<number | null>((resolve) => apply.on('close', (code) => resolve(code)));
    await waitFor(() => apply.exitCode !== null, 45_000).catch(() => {
      apply.kill('SIGKILL');
      throw new Error(`the apply still waits after 45 s: ${stderr}`);
    });
    expect(await done).toBe(1);
    expect(history(f.db, 's1').map((h) => [h.state, h.outcome])).toEqual([
      ['pre check', 'ok'],
      [PATCH[1], 'failed'],
    ]);
    expect(steps(f.db)[0].details).toMatch(new RegExp(`^${PATCH[1]}: cannot start: the launcher could not be started: spawn ${node} ENOENT`));
  }, 90_000);
});
