/**
 * Several orchestrators on one strategy (README "Several hosts"; orchestrator/workers.ts), on the
 * PostgreSQL pass's server: workers that share the stage's window and obey the operator's
 * commands, one frozen past its lease that wakes to find its subclouds taken (it writes nothing
 * and exits 4), a host killed for good whose run is run again once elsewhere with DCM_RESUMED=1
 * and a new DCM_FENCE, and a host whose clock is off. The faults across hosts with runs longer
 * than the lease are in workers-hosts.test.ts (a file of their own: the pass runs both at once).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dcm, dcmOk, waitFor, type RunResult } from '../helpers/cli.js';
import { execFixture, overlapsPerCloud, peakConcurrent, type ExecFixture } from '../helpers/exec.js';
import { everyState, FAKETIME_LIB, launcherPids, query, setup, stepStates, stopped, stopWorkers, storeRows, worker } from '../helpers/workers.js';

let f: ExecFixture | null = null;

afterEach(() => {
  stopWorkers();
  f?.cleanup();
  f = null;
});

/**
 * Two hosts on 3 subclouds, every state one command (a window of 3): s001's first run hangs, the
 * others end at once, and once they have, host B joins; then host A goes for good: its worker,
 * the launcher that would have told the run's end, and the run. Every run notes its cloud, state,
 * attempt, whether it was resumed and its fence in `envs` (one line each, `|` between).
 */
async function loseHostA(defaults: string, topLevel = ''): Promise<{ fx: ExecFixture; envs: string; logs: string; hostB: ReturnType<typeof worker> }> {
  f = execFixture();
  const fx = f;
  const envs = path.join(fx.dir, 'envs.log');
  const first = path.join(fx.dir, 'first.pid');
  const cmd = `echo "$DCM_CLOUD|$DCM_STATE|$DCM_ATTEMPT|\${DCM_RESUMED:-0}|$DCM_FENCE" >> ${envs}; if [ "$DCM_CLOUD" = s001 ] && [ ! -e ${first} ]; then echo $$ > ${first}; exec sleep 600; fi`;
  const logs = path.join(fx.dir, 'logs');
  setup(fx.db, 3, 3, `
defaults: {${defaults}, kill_grace: 1s}
states:
  "*": [sh, -c, ${JSON.stringify(cmd)}]
${topLevel}
`, fx, '--log-dir', logs);
  const hostA = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' });
  await waitFor(() => fs.existsSync(first) && fs.readFileSync(first, 'utf8').trim() !== '', 60_000);
  await waitFor(() => query<{ n: number }>(fx.db, `SELECT count(*) AS n FROM strategy_step WHERE state = 'complete'`)[0].n === 2, 60_000);
  const hostB = worker(fx.db, { ...fx.env, DCM_HOST: 'host-b' });
  await waitFor(() => query<{ n: number }>(fx.db, 'SELECT count(*) AS n FROM apply_worker')[0].n === 2, 60_000);
  const launchers = launcherPids(logs);
  expect(launchers.size).toBe(1);
  for (const pid of launchers) process.kill(pid, 'SIGKILL');
  hostA.child.kill('SIGKILL');
  process.kill(Number(fs.readFileSync(first, 'utf8')), 'SIGKILL');
  await hostA.done;
  return { fx, envs, logs, hostB };
}

describe('several workers on one strategy', () => {
  test('--max-local and --lease on a file: exit 2, one line, nothing changed (a file has one orchestrator)', () => {
    f = execFixture();
    const file = path.join(f.dir, 'one.db');
    dcmOk(['--db', file, 'subcloud', 'add', 's1']);
    dcmOk(['--db', file, 'strategy', 'create', '--type', 'patch']);
    const before = fs.readFileSync(file);
    for (const opt of [['--max-local', '2'], ['--lease', '10s']]) {
      const r = dcm(['--db', file, 'strategy', 'apply', ...opt]);
      expect([r.code, r.stderr.trim().split('\n')]).toEqual([2, [`error: ${opt[0]} needs a PostgreSQL store: a file has one orchestrator`]]);
    }
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect(dcm(['--db', file, 'strategy', 'apply', '--lease', '10ms']).code).toBe(2);
  });

  test('three workers share the stage window (counted across them), --max-local caps one, the views count them, and each ends as the strategy does', async () => {
    f = execFixture();
    const fx = f;
    setup(fx.db, 150, 12, everyState(fx, 100, 200), fx);
    const a = worker(fx.db, fx.env, '--progress-interval', '500ms');
    const b = worker(fx.db, fx.env);
    const c = worker(fx.db, fx.env, '--max-local', '2');
    // While they run, the status lists every worker.
    await waitFor(() => query<{ n: number }>(fx.db, 'SELECT count(*) AS n FROM apply_worker')[0].n === 3, 60_000);
    const status = JSON.parse(dcmOk(['--db', fx.db, 'strategy', 'status', '-f', 'json']).stdout);
    expect(status.orchestrator).toMatch(/^3 worker\(s\):\n.* pid \d+, heartbeat .* ago, \d+ in flight, \d+ done\n/);
    const ends = await Promise.all([a.done, b.done, c.done]);
    expect(ends.map((e) => e.code)).toEqual([0, 0, 0]);
    // The progress lines count every worker's steps and the workers (from a's heartbeats).
    expect(ends[0].stderr).toMatch(/progress: stage 1 of 1 \(window 12\): \d+\/150 done .*, 3 workers: \d+ in flight here, \d+ elsewhere, /);
    expect(ends[0].stderr).toMatch(/\nstrategy complete: 150 complete in /);
    // Issue 34: the closing line gives the stage's window, not the worker's share of it.
    expect(ends[0].stderr).toMatch(/\nstrategy complete: 150 complete in .*, window 12, this worker's share \d+\)\n/);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 150 }]);
    const runs = fx.readRuns();
    expect(runs).toHaveLength(150 * 5);
    expect(overlapsPerCloud(runs)).toEqual([]);
    expect(peakConcurrent(runs)).toBeLessThanOrEqual(12);
    // Every worker ran some of the fleet (each takes its share of the window, or its cap).
    const owners = query<{ owner: number; n: number }>(fx.db, 'SELECT owner, count(*) AS n FROM strategy_step GROUP BY owner ORDER BY owner');
    expect(owners).toHaveLength(3);
    expect(fx.leftovers()).toEqual([]);
    expect(query(fx.db, 'SELECT * FROM apply_worker')).toEqual([]);
  }, 180_000);

  test('pause, update, resume and abort from another shell reach every worker; each ends as the strategy does', async () => {
    f = execFixture();
    const fx = f;
    setup(fx.db, 80, 8, everyState(fx, 150, 300), fx);
    const a = worker(fx.db, fx.env);
    const b = worker(fx.db, fx.env);
    await waitFor(() => fx.readRuns().length >= 10 && query<{ n: number }>(fx.db, 'SELECT count(*) AS n FROM apply_worker')[0].n === 2, 60_000);
    const midState = () => query<{ n: number }>(fx.db, `SELECT count(*) AS n FROM strategy_step WHERE state NOT IN ('initial', 'complete', 'failed', 'aborted')`)[0].n;
    dcmOk(['--db', fx.db, 'strategy', 'pause']);
    // Paused: both finish what they hold, start nothing new, and stay.
    await waitFor(() => midState() === 0, 60_000);
    expect([a.child.exitCode, b.child.exitCode]).toEqual([null, null]);
    const left = query<{ n: number }>(fx.db, `SELECT count(*) AS n FROM strategy_step WHERE state = 'initial'`)[0].n;
    expect(left).toBeGreaterThan(0);
    dcmOk(['--db', fx.db, 'strategy', 'update', '--max-parallel-subclouds', '3']);
    const resumedNs = Date.now() * 1e6;
    dcmOk(['--db', fx.db, 'strategy', 'resume']);
    await waitFor(() => query<{ n: number }>(fx.db, `SELECT count(*) AS n FROM strategy_step WHERE state = 'initial'`)[0].n <= left - 4, 60_000);
    dcmOk(['--db', fx.db, 'strategy', 'abort']);
    const ends = await Promise.all([a.done, b.done]);
    expect(ends.map((e) => [e.code, e.stderr])).toEqual([
      [3, ''],
      [3, ''],
    ]);
    const states = stepStates(fx.db);
    expect(states.map((x) => x.state)).toEqual(['aborted', 'complete']);
    const runs = fx.readRuns();
    // After the resume the new window held across both workers, by the commands' own log.
    expect(peakConcurrent(runs.filter((r) => r.start >= resumedNs))).toBeLessThanOrEqual(3);
    expect(overlapsPerCloud(runs)).toEqual([]);
    // Every subcloud that started ran to its end: 5 runs each, the aborted ones none.
    expect(runs).toHaveLength(states.find((x) => x.state === 'complete')!.n * 5);
    expect(fx.leftovers()).toEqual([]);
  }, 180_000);

  // Frozen between two transactions, or inside one (a test hook stops it there, holding the
  // writers' lock): the server ends a session idle in a transaction, so the lock goes with it.
  test.each([
    ['between two transactions', {}],
    ["inside a transaction, holding the writers' lock", { DCM_TEST_HOOKS: '1', DCM_STOP_IN_COMMIT: '8' }],
  ])('a worker frozen past its lease %s is taken over; woken, it writes nothing more (row by row) and exits 4', async (_when, hook) => {
    f = execFixture();
    const fx = f;
    setup(fx.db, 40, 8, everyState(fx, 100, 300), fx);
    const frozen = worker(fx.db, { ...fx.env, ...hook });
    if ('DCM_STOP_IN_COMMIT' in hook) await waitFor(() => stopped(frozen.child.pid!), 60_000);
    else {
      await waitFor(() => fx.readRuns().length >= 3, 60_000);
      frozen.child.kill('SIGSTOP');
    }
    const other = worker(fx.db, fx.env);
    const end = await other.done;
    expect([end.code, end.stderr]).toEqual([0, '']);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 40 }]);
    const before = storeRows(fx.db);
    frozen.child.kill('SIGCONT');
    const woken: RunResult = await frozen.done;
    expect(woken.code).toBe(4);
    expect(woken.stderr).toMatch(/lost this worker's lease/);
    expect(storeRows(fx.db)).toEqual(before);
    // Its runs were adopted by the other worker (the same host): each state ran once.
    const runs = fx.readRuns();
    expect(overlapsPerCloud(runs)).toEqual([]);
    expect(new Set(runs.map((r) => `${r.cloud}|${r.state}`)).size).toBe(runs.length);
    expect(fx.leftovers()).toEqual([]);
  }, 180_000);

  test('a worker stopped between the commit of its starts and their launch is taken over; the runs go again as the next attempt, and woken it launches none of the old ones', async () => {
    f = execFixture();
    const fx = f;
    setup(fx.db, 3, 3, everyState(fx, 50, 100), fx);
    // Its second commit (the first is the apply's own start) opens the subclouds' first runs.
    const frozen = worker(fx.db, { ...fx.env, DCM_TEST_HOOKS: '1', DCM_STOP_AFTER_COMMIT: '2' });
    await waitFor(() => stopped(frozen.child.pid!), 60_000);
    const opened = query<{ cloud: string }>(
      fx.db,
      `SELECT sc.name AS cloud FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id
       WHERE h.outcome = 'running' AND h.pid IS NULL ORDER BY 1`,
    ).map((r) => r.cloud);
    expect(opened.length).toBeGreaterThan(0);
    expect(fx.readRuns()).toEqual([]);
    const other = worker(fx.db, fx.env);
    const end = await other.done;
    expect([end.code, end.stderr]).toEqual([0, '']);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 3 }]);
    const before = storeRows(fx.db);
    frozen.child.kill('SIGCONT');
    const woken: RunResult = await frozen.done;
    expect(woken.code).toBe(4);
    expect(storeRows(fx.db)).toEqual(before);
    // The runs it had committed and not launched were given up by the other worker: never started.
    const runs = fx.readRuns();
    for (const cloud of opened) {
      expect(runs.filter((r) => r.cloud === cloud && r.state === 'pre check').map((r) => [r.attempt, r.resumed])).toEqual([[2, true]]);
    }
    expect(new Set(runs.map((r) => `${r.cloud}|${r.state}`)).size).toBe(runs.length);
    expect(runs).toHaveLength(3 * 5);
    expect(fx.leftovers()).toEqual([]);
  }, 180_000);

  // Issue 48, break 4's rule: a host not proven gone is never run again by itself. Past the run's
  // bound (its timeout, its kill grace twice, the launcher's backstop twice) with no end, the run is
  // held as of unknown outcome: in flight, said so, never run again blindly, until its host says or
  // the operator does.
  test('two hosts; the one with a run in flight is lost for good: past the run\'s bound it is held as unknown, never run again by itself; resolve says how it ended', async () => {
    const { fx, envs, hostB } = await loseHostA('timeout: 3s');
    const history = () => JSON.parse(dcmOk(['--db', fx.db, 'strategy-step', 'history', 's001', '-f', 'json']).stdout) as { outcome: string; details: string | null }[];
    await waitFor(() => history().some((h) => h.outcome === 'unknown'), 60_000);
    const held = history().find((h) => h.outcome === 'unknown')!;
    // Nothing told its end within its bound: 3 s, 1 s of grace twice, the launcher's 5 s twice.
    expect(held.details).toMatch(/^unknown: its host \(host-a\) has not said how the run ended within 15s \(its state's timeout and grace\): held, not run again, until its host says or `dcm strategy-step resolve s001 --as ok\|failed` or `dcm strategy retry s001`$/);
    const events = query<{ details: string }>(fx.db, `SELECT details FROM strategy_event WHERE event = 'run unknown'`);
    expect(events.map((e) => e.details)).toEqual([expect.stringMatching(/^s001: \S.*, attempt 1: its host \(host-a\) has not said/)]);
    const status = JSON.parse(dcmOk(['--db', fx.db, 'strategy', 'status', '-f', 'json'], { env: { DCM_HOST: 'host-c' } }).stdout) as Record<string, unknown>;
    expect(status['in flight']).toBe(1);
    expect(fs.readFileSync(envs, 'utf8').split('\n').filter((l) => l.startsWith('s001|'))).toHaveLength(1);
    // The operator knows: the state ended ok at the site. Host B takes that and goes on.
    const said = dcm(['--db', fx.db, 'strategy-step', 'resolve', 's001', '--as', 'ok', '--reason', 'the site says it is patched'], { env: { USER: 'alice', DCM_HOST: 'ops' } });
    expect(said.code).toBe(0);
    const end = await hostB.done;
    expect([end.code, end.stderr]).toEqual([0, '']);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 3 }]);
    const s1 = fs.readFileSync(envs, 'utf8').split('\n').filter((l) => l.startsWith('s001|')).map((l) => l.split('|'));
    expect(new Set(s1.map((l) => l[1])).size).toBe(s1.length);
  }, 180_000);

  test('two hosts; a state that says on_lost_host: rerun: past the bound the lost host\'s run goes again once, the next attempt, DCM_RESUMED=1 and a new fence', async () => {
    const { fx, envs, logs, hostB } = await loseHostA('timeout: 3s, on_lost_host: rerun');
    const end = await hostB.done;
    expect(end.code).toBe(0);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 3 }]);
    const s1 = fs.readFileSync(envs, 'utf8').split('\n').filter((l) => l.startsWith('s001|')).map((l) => l.split('|'));
    const [st, att, , fence] = s1[0].slice(1);
    const again = s1.filter((l) => l[1] === st);
    expect(again.map((l) => [l[2], l[3]])).toEqual([
      [att, '0'],
      [String(Number(att) + 1), '1'],
    ]);
    expect(again[1][4]).not.toBe(fence);
    const hist = query<{ outcome: string; details: string }>(
      fx.db,
      `SELECT h.outcome, h.details FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id
       WHERE sc.name = 's001' AND h.state = $1 ORDER BY h.id`,
      [st],
    );
    expect(hist.map((h) => h.outcome)).toEqual(['interrupted', 'ok']);
    // Nothing told its end within its bound (3 s, 1 s of grace twice, the launcher's 5 s twice): run again, as the state says.
    expect(hist[0].details).toMatch(/its host \(host-a\) never said how the run ended; after 15s it runs again, as its state says \(on_lost_host: rerun\)$/);
    // Each host keeps the logs of the runs it started: read from a third, the command says where they are.
    fs.rmSync(logs, { recursive: true, force: true });
    const r = dcm(['--db', fx.db, 'strategy-step', 'logs', 's001'], { env: { DCM_HOST: 'host-c' } });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^dcm: no run logs for s001 \(in .*\); its runs ran on host-a \(\d+\), host-b \(\d+\): their logs are there\n$/);
  }, 180_000);

  test('two hosts; a run of a state with no timeout is lost with its host: held as unknown (history, list, status), in flight, never run again blindly; strategy retry runs it again', async () => {
    // Issue 49, item 6: on_event hears the run held unknown (from the worker that holds it).
    const told = path.join(os.tmpdir(), `dcm-told-${process.pid}-${Date.now()}.jsonl`);
    const { fx, envs, hostB } = await loseHostA('timeout: none', `on_event: cat >> ${told}`);
    // Host B takes host A over and holds the run: its history says unknown, its step's line why.
    const history = () => JSON.parse(dcmOk(['--db', fx.db, 'strategy-step', 'history', 's001', '-f', 'json']).stdout) as { outcome: string; details: string | null }[];
    await waitFor(() => history().some((h) => h.outcome === 'unknown'), 60_000);
    const held = history().find((h) => h.outcome === 'unknown')!;
    const heard = () => (fs.existsSync(told) ? fs.readFileSync(told, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : []);
    await waitFor(() => heard().some((n) => n.notice === 'run unknown'), 30_000);
    const notice = heard().find((n) => n.notice === 'run unknown')!;
    expect(notice).toMatchObject({ event: 'run unknown', host: 'host-b' });
    expect(notice.details).toMatch(/^s001: \S.*, attempt 1: its host \(host-a\) is gone without saying how the run ended/);
    fs.rmSync(told, { force: true });
    expect(held.details).toMatch(/^unknown: its host \(host-a\) is gone without saying how the run ended, and \S.* has no timeout: held until `dcm strategy-step resolve s001 --as ok\|failed` or `dcm strategy retry s001`$/);
    const list = JSON.parse(dcmOk(['--db', fx.db, 'strategy-step', 'list', '-f', 'json']).stdout) as { cloud: string; details: string }[];
    expect(list.find((r) => r.cloud === 's001')!.details).toBe(held.details);
    // In flight (what the window counts), and said so to the operator with what to do.
    const status = JSON.parse(dcmOk(['--db', fx.db, 'strategy', 'status', '-f', 'json'], { env: { DCM_HOST: 'host-c' } }).stdout) as Record<string, unknown>;
    expect(status['in flight']).toBe(1);
    // Issue 49: not `0ms`: only the operator ends that wait, and the ETA says so.
    expect(status.eta).toMatch(/^waits for the operator \(1 run\(s\) of unknown outcome: strategy-step resolve or strategy retry\): /);
    expect(status.orchestrator).toMatch(/\nunknown: s001 \(.*, on host-a, no live worker there\): held until its host says how it ended, `dcm strategy-step resolve s001 --as ok\|failed`, or `dcm strategy retry s001` to run it again$/);
    expect(fs.readFileSync(envs, 'utf8').split('\n').filter((l) => l.startsWith('s001|'))).toHaveLength(1);
    // Named with a cloud that has no such run: refused, one line, nothing written.
    const mixed = dcm(['--db', fx.db, 'strategy', 'retry', 's001', 's002']);
    expect([mixed.code, mixed.stderr]).toEqual([1, 'error: s002: no run of unknown outcome; retry the one of s001 apart\n']);
    expect(query(fx.db, `SELECT run_id FROM run_end WHERE host LIKE 'operator %'`)).toEqual([]);
    // The operator runs it again: the next attempt, resumed, on host B, which then ends.
    const retry = dcm(['--db', fx.db, 'strategy', 'retry', 's001', '--reason', 'site checked: nothing applied'], { env: { USER: 'alice', DCM_HOST: 'ops' } });
    expect(retry.code).toBe(0);
    expect(retry.stderr).toMatch(/^retry runs again 1 run of unknown outcome .*\n  s001: \S.*, attempt 1, on host-a\n$/);
    const end = await hostB.done;
    expect([end.code, end.stderr]).toEqual([0, '']);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 3 }]);
    const s1 = fs.readFileSync(envs, 'utf8').split('\n').filter((l) => l.startsWith('s001|')).map((l) => l.split('|'));
    expect(s1.filter((l) => l[1] === s1[0][1]).map((l) => [l[2], l[3]])).toEqual([['1', '0'], ['2', '1']]);
    expect(history().filter((h) => h.outcome !== 'ok')).toEqual([
      expect.objectContaining({ outcome: 'interrupted', details: 'run again by alice@ops (strategy retry): its host (host-a) never said how it ended' }),
    ]);
  }, 180_000);

  test('a host whose clock is 10 minutes ahead takes no live worker over: leases are judged by the database server clock', async () => {
    f = execFixture();
    const fx = f;
    setup(fx.db, 24, 4, everyState(fx, 100, 200), fx);
    const a = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' });
    await waitFor(() => fx.readRuns().length >= 2, 60_000);
    // libfaketime moves host-b's wall clock (Date.now, its commands' clock too), not its timers.
    const ahead = { LD_PRELOAD: FAKETIME_LIB, FAKETIME: '+600s', FAKETIME_DONT_FAKE_MONOTONIC: '1', DCM_HOST: 'host-b' };
    // Not quiet: its closing line says how long since the first start, which host-a made.
    const b = worker(fx.db, { ...fx.env, ...ahead }, '--progress-interval', '0s');
    const ends = await Promise.all([a.done, b.done]);
    expect(ends.map((e) => e.code)).toEqual([0, 0]);
    expect(ends[0].stderr).toBe('');
    expect(ends[1].stderr).not.toMatch(/error|warning/i);
    // Counted on the store's clock: the real time since host-a started, not 10 minutes more.
    const since = /, (\S+) since the first start/.exec(ends[1].stderr);
    expect(since).not.toBeNull();
    expect(since![1]).not.toMatch(/h/);
    expect(Number(/(\d+)m/.exec(since![1])?.[1] ?? 0)).toBeLessThan(10);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 24 }]);
    expect(query(fx.db, `SELECT event FROM strategy_event WHERE event = 'worker taken over'`)).toEqual([]);
    // Both took part; every state ran once (times in host-b's runs are 10 minutes ahead: no overlap check).
    expect(query<{ n: number }>(fx.db, 'SELECT count(DISTINCT owner) AS n FROM strategy_step')[0].n).toBe(2);
    const runs = fx.readRuns();
    expect(new Set(runs.map((r) => `${r.cloud}|${r.state}`)).size).toBe(runs.length);
    expect(runs).toHaveLength(24 * 5);
  }, 180_000);
});
