/**
 * Several orchestrators on one strategy (README "Several hosts"; orchestrator/workers.ts), on the
 * PostgreSQL pass's server: workers that share the stage's window, one frozen past its lease that
 * wakes to find its subclouds taken (it writes nothing and exits 4), a host killed for good whose
 * run is run again once elsewhere with DCM_RESUMED=1 and a new DCM_FENCE, and three workers under
 * kill -9 and SIGSTOP at random with the exec driver's own log as the judge.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, dcmOk, dcmSpawn, sleep, waitFor, type RunResult } from '../helpers/cli.js';
import { execFixture, overlapsPerCloud, peakConcurrent, type ExecFixture } from '../helpers/exec.js';
import { SyncPg } from '../../src/platform/pg-sync.js';
import { startCluster } from './global-setup.js';

/** Debian's libfaketime (package faketime; .ci/run installs it): a process with its wall clock moved. */
const FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

let f: ExecFixture | null = null;
const children: { child: { pid?: number; kill: (s: NodeJS.Signals) => boolean } }[] = [];

afterEach(() => {
  for (const c of children.splice(0)) {
    try {
      c.child.kill('SIGCONT');
      c.child.kill('SIGKILL');
    } catch {
      // gone
    }
  }
  f?.cleanup();
  f = null;
  if (own) {
    own.stop();
    own = null;
    process.env.DCM_TEST_PG_URL = passUrl;
  }
});

/** The pass's cluster, and a test's own while it has one (a restart would cut the other files'). */
const passUrl = process.env.DCM_TEST_PG_URL;
let own: ReturnType<typeof startCluster> | null = null;

const names = (n: number, prefix = 's') => Array.from({ length: n }, (_, i) => `${prefix}${String(i + 1).padStart(3, '0')}`);

function query<T>(db: string, text: string, values: unknown[] = []): T[] {
  const pg = new SyncPg(db);
  try {
    return pg.query(text, values).rows as T[];
  } finally {
    pg.close();
  }
}

/** Every row of the store's own tables (not the sim's far side), table by table. */
function storeRows(db: string): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const { t } of query<{ t: string }>(db, `SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)) {
    out[t] = query(db, `SELECT * FROM ${t} ORDER BY 1`);
  }
  return out;
}

/** A worker with a 2 s lease; quiet unless it is asked for progress lines. */
function worker(db: string, env: Record<string, string>, ...args: string[]) {
  const quiet = args.includes('--progress-interval') ? [] : ['-q'];
  const w = dcmSpawn(['--db', db, 'strategy', 'apply', ...quiet, '--lease', '2s', ...args], env, { detached: true });
  children.push(w);
  return w;
}

function setup(db: string, n: number, window: number, yaml: string, fx: ExecFixture, ...more: string[]): void {
  dcmOk(['--db', db, 'subcloud', 'add', ...names(n)]);
  dcmOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', String(window), '--driver', 'exec', '--exec-config', fx.config(yaml), ...more]);
}

/** An exec config: every state runs the fixture's step.sh, which takes min..max ms and logs the run. */
const everyState = (fx: ExecFixture, minMs: number, maxMs: number) => `
defaults: {env: {STEP_MIN_MS: "${minMs}", STEP_MAX_MS: "${maxMs}"}}
states:
  "*": [${fx.step}, "{cloud}", "{state}"]
`;

/** The process is stopped (SIGSTOP): its state in /proc is T. */
const stopped = (pid: number) => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').startsWith('T');

/** How many times each (site, state) ran, by the runs' own log. */
function runsPerState(runs: readonly { cloud: string; state: string }[]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const r of runs) seen.set(`${r.cloud}|${r.state}`, (seen.get(`${r.cloud}|${r.state}`) ?? 0) + 1);
  return seen;
}

/** Runs `running` in the history whose process is recorded (launched, not only committed). */
const runsWithPid = (db: string) => query<{ n: number }>(db, `SELECT count(*) AS n FROM step_history WHERE outcome = 'running' AND pid IS NOT NULL`)[0].n;

/**
 * What a loop whose workers did not end leaves to read: each live worker's stderr and JavaScript
 * stack (Node's report, asked for by SIGUSR2), the workers the store knows, the steps not complete.
 */
async function explainHang(db: string, reports: string, pool: readonly { child: { pid?: number; kill: (s: NodeJS.Signals) => boolean }; stderr: () => string; ended: unknown }[]): Promise<string> {
  const out: string[] = [];
  for (const w of pool.filter((p) => p.ended === null)) {
    w.child.kill('SIGCONT');
    w.child.kill('SIGUSR2');
  }
  await sleep(3_000);
  for (const w of pool.filter((p) => p.ended === null)) {
    out.push(`worker pid ${w.child.pid}, stderr:\n${w.stderr().slice(-4_000)}`);
    const file = fs.existsSync(reports) ? fs.readdirSync(reports).find((n) => n.includes(`.${w.child.pid}.`)) : undefined;
    if (file) {
      const r = JSON.parse(fs.readFileSync(path.join(reports, file), 'utf8')) as { javascriptStack?: { stack?: string[] } };
      out.push(`its stack:\n${(r.javascriptStack?.stack ?? []).join('\n')}`);
    }
  }
  out.push(`apply_worker: ${JSON.stringify(query(db, 'SELECT * FROM apply_worker'))}`);
  out.push(`strategy: ${JSON.stringify(query(db, 'SELECT state FROM strategy'))}`);
  out.push(`steps not complete: ${JSON.stringify(query(db, `SELECT * FROM strategy_step WHERE state <> 'complete' ORDER BY 1`))}`);
  out.push(`runs running: ${JSON.stringify(query(db, `SELECT * FROM step_history WHERE outcome = 'running' ORDER BY 1`))}`);
  return out.join('\n');
}

const stepStates = (db: string) => query<{ state: string; n: number }>(db, 'SELECT state, count(*) AS n FROM strategy_step GROUP BY state ORDER BY state');

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

  test('two hosts; the one with a run in flight is lost for good (worker, launcher, run): past the run\'s timeout it goes again once, the next attempt, DCM_RESUMED=1 and a new fence', async () => {
    f = execFixture();
    const fx = f;
    const envs = path.join(fx.dir, 'envs.log');
    const first = path.join(fx.dir, 'first.pid');
    // s001's first run hangs (its pid noted); every run notes its fence and whether it was resumed.
    const cmd = `echo "$DCM_CLOUD|$DCM_STATE|$DCM_ATTEMPT|\${DCM_RESUMED:-0}|$DCM_FENCE" >> ${envs}; if [ "$DCM_CLOUD" = s001 ] && [ ! -e ${first} ]; then echo $$ > ${first}; exec sleep 600; fi`;
    const logs = path.join(fx.dir, 'logs');
    setup(fx.db, 3, 3, `
defaults: {timeout: 3s, kill_grace: 1s}
states:
  "*": [sh, -c, ${JSON.stringify(cmd)}]
`, fx, '--log-dir', logs);
    const hostA = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' });
    await waitFor(() => fs.existsSync(first) && fs.readFileSync(first, 'utf8').trim() !== '', 60_000);
    await waitFor(() => query<{ n: number }>(fx.db, `SELECT count(*) AS n FROM strategy_step WHERE state = 'complete'`)[0].n === 2, 60_000);
    const hostB = worker(fx.db, { ...fx.env, DCM_HOST: 'host-b' });
    await waitFor(() => query<{ n: number }>(fx.db, 'SELECT count(*) AS n FROM apply_worker')[0].n === 2, 60_000);
    // Host A goes for good: its worker, the launcher that would have told the run's end, and the run.
    const launchers = new Set(
      (fs.readdirSync(logs, { recursive: true }) as string[])
        .filter((n) => n.endsWith('.pid'))
        .map((n) => Number(fs.readFileSync(path.join(logs, n), 'utf8').trim().split(/\s+/)[1])),
    );
    expect(launchers.size).toBe(1);
    for (const pid of launchers) process.kill(pid, 'SIGKILL');
    hostA.child.kill('SIGKILL');
    process.kill(Number(fs.readFileSync(first, 'utf8')), 'SIGKILL');
    await hostA.done;
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
    // Nothing told its end: held until it could not be going any more (3 s, 1 s of grace twice, the launcher's 5 s twice).
    expect(hist[0].details).toMatch(/its host \(host-a\) never said how the run ended; after 15s it cannot be going any more$/);
    // Each host keeps the logs of the runs it started: read from a third, the command says where they are.
    fs.rmSync(logs, { recursive: true, force: true });
    const r = dcm(['--db', fx.db, 'strategy-step', 'logs', 's001'], { env: { DCM_HOST: 'host-c' } });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^dcm: no run logs for s001 \(in .*\); its runs ran on host-a \(\d+\), host-b \(\d+\): their logs are there\n$/);
  }, 180_000);

  /**
   * Two hosts, runs longer than the lease: host-a's worker is frozen past its lease, or killed,
   * with its runs in flight; host-b takes it over. Its runs go on (their launcher outlives the
   * worker) and tell their ends to the store: host-b takes those results and never starts a state
   * of theirs again. Judged by the runs' own log.
   */
  test.each([
    ['frozen past its lease', 'SIGSTOP'],
    ['killed', 'SIGKILL'],
  ] as const)('two hosts; a worker %s with runs in flight: the other takes their results, no state runs twice, none overlaps', async (_what, signal) => {
    f = execFixture();
    const fx = f;
    const N = 4;
    setup(fx.db, N, N, everyState(fx, 2_500, 3_000), fx);
    const a = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' });
    // host-a has every subcloud in flight, each in its first state.
    await waitFor(() => runsWithPid(fx.db) === N, 60_000);
    const b = worker(fx.db, { ...fx.env, DCM_HOST: 'host-b' });
    await waitFor(() => query<{ n: number }>(fx.db, 'SELECT count(*) AS n FROM apply_worker')[0].n === 2, 60_000);
    a.child.kill(signal);
    // Taken over while its runs still go (a lease of 2 s, runs of 2.5 s or more).
    await waitFor(() => query(fx.db, `SELECT 1 FROM strategy_event WHERE event = 'worker taken over'`).length === 1, 60_000);
    if (signal === 'SIGSTOP') a.child.kill('SIGCONT');
    const [endA, endB] = await Promise.all([a.done, b.done]);
    expect(endA.code).toBe(signal === 'SIGSTOP' ? 4 : null);
    expect([endB.code, endB.stderr]).toEqual([0, '']);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: N }]);
    const runs = fx.readRuns();
    expect(overlapsPerCloud(runs)).toEqual([]);
    const seen = runsPerState(runs);
    expect([...seen].filter(([, n]) => n > 1)).toEqual([]);
    expect(runs).toHaveLength(N * 5);
    // The runs host-a started ended `ok` in the history, taken by host-b from their ends.
    const first = query<{ outcome: string; n: number }>(fx.db, `SELECT outcome, count(*) AS n FROM step_history WHERE host = 'host-a' GROUP BY outcome`);
    expect(first).toEqual([{ outcome: 'ok', n: N }]);
    await waitFor(() => fx.leftovers().length === 0, 60_000, 100);
  }, 180_000);

  /**
   * Another session holds the writers' lock for 15 s (a stuck tool, a migration): a
   * worker waiting for it still renews its lease (on its own connection), answers Ctrl-C while the
   * lock is held, and is not taken for gone; a second worker joining then waits for the lock
   * rather than dying of it. Judged by the lease's own row and the workers' own lines.
   */
  test('another session holds the writers\' lock: the waiting worker renews its lease and answers Ctrl-C meanwhile, a worker joining waits, nobody is taken over', async () => {
    f = execFixture();
    const fx = f;
    setup(fx.db, 12, 3, everyState(fx, 200, 400), fx);
    const a = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' }, '--progress-interval', '0s');
    await waitFor(() => fx.readRuns().length >= 2, 60_000);
    const holder = new SyncPg(fx.db);
    let b: ReturnType<typeof worker> | null = null;
    try {
      // Held until the test lets go (dcm's own sessions would be ended after 5 s idle in it).
      holder.query('SET idle_in_transaction_session_timeout = 0');
      holder.query('BEGIN');
      holder.query('SELECT pg_advisory_xact_lock($1)', [0x44434d31]);
      const heldSince = Date.now();
      const beat = () => Number(query<{ b: string }>(fx.db, 'SELECT heartbeat_ms AS b FROM apply_worker')[0].b);
      const heardAt = beat();
      // Its lease is renewed while its writes wait: twice over, with the lock still held.
      await waitFor(() => beat() > heardAt, 30_000, 50);
      const heardAgain = beat();
      await waitFor(() => beat() > heardAgain, 30_000, 50);
      // A second worker joins now: it waits for the lock.
      const joining = (b = worker(fx.db, { ...fx.env, DCM_HOST: 'host-b' }, '--progress-interval', '0s'));
      await waitFor(() => /waiting for it to join the workers/.test(joining.stderr()), 30_000, 50);
      // Ctrl-C reaches the waiting worker and is answered while the lock is still held.
      a.child.kill('SIGINT');
      const sent = Date.now();
      await waitFor(() => /SIGINT: starting nothing new/.test(a.stderr()), 30_000, 50);
      // What it took is printed for BENCHMARKS.md, never asserted (a busy machine is slower).
      process.stderr.write(`lock held ${Date.now() - heldSince} ms; Ctrl-C answered in ${Date.now() - sent} ms\n`);
      expect(query(fx.db, 'SELECT 1 FROM apply_worker WHERE host = $1', ['host-b'])).toEqual([]);
      // Held 15 s in all, past seven leases (2 s): its lease is renewed all along (its last renewal
      // 13 s or more after the first one read), so the worker that joins once the lock is free
      // finds it live, and takes nothing over.
      await waitFor(() => Date.now() - heldSince >= 15_000 && beat() >= heardAt + 13_000, 60_000, 100);
    } finally {
      holder.query('ROLLBACK');
      holder.close();
    }
    const endA = await a.done;
    expect(endA.code).toBe(130);
    const endB = await b!.done;
    expect(endB.code).toBe(0);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: 12 }]);
    expect(query(fx.db, `SELECT event FROM strategy_event WHERE event = 'worker taken over'`)).toEqual([]);
    const runs = fx.readRuns();
    expect(overlapsPerCloud(runs)).toEqual([]);
    expect(new Set(runs.map((r) => `${r.cloud}|${r.state}`)).size).toBe(runs.length);
  }, 180_000);

  /**
   * The only worker, on host-a, is frozen with runs in flight; an operator on another host aborts
   * (no live worker: the abort is finished there) and later retries. The runs host-a started are
   * left `running` by the abort (nothing here can see them), the next apply takes their results
   * from their ends and ends the abort, and after the retry no state that had ended runs again.
   */
  test('abort while the only worker is frozen, then retry: the runs it left are taken as they ended, none runs again', async () => {
    f = execFixture();
    const fx = f;
    const N = 4;
    setup(fx.db, N, 2, everyState(fx, 2_500, 3_000), fx);
    const a = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' });
    await waitFor(() => runsWithPid(fx.db) === 2, 60_000);
    a.child.kill('SIGSTOP');
    // Its lease runs out: to any other host it is gone.
    await waitFor(() => query(fx.db, `SELECT 1 FROM apply_worker WHERE (extract(epoch FROM clock_timestamp()) * 1000)::bigint - heartbeat_ms > lease_ms`).length === 1, 60_000, 50);
    const abort = dcm(['--db', fx.db, 'strategy', 'abort'], { env: { DCM_HOST: 'host-c' } });
    expect(abort.code).toBe(0);
    expect(abort.stderr).toMatch(/still running, left for the next apply: s00\d \(pre check, on host-a\), s00\d \(pre check, on host-a\); the strategy stays aborting/);
    // host-a is gone for good; its launcher still tells how its runs end.
    a.child.kill('SIGKILL');
    await a.done;
    const b = worker(fx.db, { ...fx.env, DCM_HOST: 'host-b' });
    const endB = await b.done;
    // It ends the abort: exit 3, as an apply whose strategy ends aborted.
    expect([endB.code, endB.stderr]).toEqual([3, '']);
    expect(query(fx.db, 'SELECT state FROM strategy')).toEqual([{ state: 'aborted' }]);
    expect(query<{ outcome: string; n: number }>(fx.db, `SELECT outcome, count(*) AS n FROM step_history WHERE host = 'host-a' GROUP BY outcome`)).toEqual([{ outcome: 'ok', n: 2 }]);
    dcmOk(['--db', fx.db, 'strategy', 'retry'], { env: { DCM_HOST: 'host-c' } });
    const c = worker(fx.db, { ...fx.env, DCM_HOST: 'host-c' });
    expect((await c.done).code).toBe(0);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: N }]);
    const runs = fx.readRuns();
    const seen = runsPerState(runs);
    expect([...seen].filter(([, n]) => n > 1)).toEqual([]);
    expect(runs).toHaveLength(N * 5);
    expect(overlapsPerCloud(runs)).toEqual([]);
  }, 180_000);

  /**
   * The issue's third break: an abort that comes while a worker on another host is taking a frozen
   * one over (it waits for the ends of the runs the frozen one started) must end. The taker takes
   * those runs' results as they end, starts nothing new, and ends the strategy `aborted`; the
   * frozen worker, continued, exits 4 and writes nothing; after a retry no state that had ended
   * runs again.
   */
  test('abort while another host takes a frozen worker over: the abort ends, the runs left are taken as they ended, and after a retry none runs again', async () => {
    f = execFixture();
    const fx = f;
    const N = 6;
    setup(fx.db, N, 3, everyState(fx, 2_500, 3_000), fx);
    const a = worker(fx.db, { ...fx.env, DCM_HOST: 'host-a' });
    await waitFor(() => runsWithPid(fx.db) === 3, 60_000);
    const b = worker(fx.db, { ...fx.env, DCM_HOST: 'host-b' });
    await waitFor(() => query<{ n: number }>(fx.db, 'SELECT count(*) AS n FROM apply_worker')[0].n === 2, 60_000);
    a.child.kill('SIGSTOP');
    // host-b takes host-a over while host-a's runs (2.5 s or more, a lease of 2 s) still go.
    await waitFor(() => query(fx.db, `SELECT 1 FROM strategy_event WHERE event = 'worker taken over'`).length === 1, 60_000, 50);
    const abort = dcm(['--db', fx.db, 'strategy', 'abort'], { env: { DCM_HOST: 'host-c' } });
    expect(abort.code).toBe(0);
    const endB = await b.done;
    expect([endB.code, endB.stderr]).toEqual([3, '']);
    expect(query(fx.db, 'SELECT state FROM strategy')).toEqual([{ state: 'aborted' }]);
    a.child.kill('SIGCONT');
    expect((await a.done).code).toBe(4);
    // Nothing is left running; what host-a started ended ok, its results taken by host-b.
    expect(query(fx.db, `SELECT 1 FROM step_history WHERE outcome = 'running'`)).toEqual([]);
    expect(query<{ outcome: string; n: number }>(fx.db, `SELECT outcome, count(*) AS n FROM step_history WHERE host = 'host-a' GROUP BY outcome`)).toEqual([{ outcome: 'ok', n: 3 }]);
    dcmOk(['--db', fx.db, 'strategy', 'retry'], { env: { DCM_HOST: 'host-c' } });
    const c = worker(fx.db, { ...fx.env, DCM_HOST: 'host-c' });
    expect((await c.done).code).toBe(0);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: N }]);
    const runs = fx.readRuns();
    expect([...runsPerState(runs)].filter(([, n]) => n > 1)).toEqual([]);
    expect(runs).toHaveLength(N * 5);
    expect(overlapsPerCloud(runs)).toEqual([]);
    await waitFor(() => fx.leftovers().length === 0, 60_000, 100);
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

  /**
   * Three workers under faults at random, judged by the runs' own log. On one host a worker
   * restarted adopts what its predecessor left through the run files; as three hosts (the issue's
   * loop: 150 subclouds, runs of 0–2 s, window 20), a taker on another host takes the ends the
   * runs' launcher wrote to the store, every connection is also cut now and then
   * (pg_terminate_backend), and the server crashes and starts again (on a cluster of the test's
   * own: the other files of the pass share theirs).
   */
  // The one-host loop (its faults are the simulator's one-host schedules' too) runs under
  // `npm run test:big`; the three-host one, the issue's, in every PostgreSQL pass.
  test.each([
    ...(process.env.DCM_BIG_TESTS ? [{ what: 'on one host, kill -9 or SIGSTOP past the lease 30 times', hosts: false, N: 300, WINDOW: 30, min: 300, max: 700, FAULTS: 30 }] : []),
    { what: 'as three hosts, kill -9, SIGSTOP past the lease, every connection cut or the server restarted 20 times', hosts: true, N: 150, WINDOW: 20, min: 0, max: 2_000, FAULTS: 20 },
  ])('three workers $what: no overlap, nothing completed twice, the window held, all complete', async ({ hosts, N, WINDOW, min, max, FAULTS }) => {
    if (hosts) {
      own = startCluster();
      process.env.DCM_TEST_PG_URL = own.url;
    }
    f = execFixture();
    const fx = f;
    setup(fx.db, N, WINDOW, everyState(fx, min, max), fx);
    type W = ReturnType<typeof worker> & { ended: RunResult | null; stopped: boolean };
    // A worker that never ends is asked (SIGUSR2) for Node's report: its JavaScript stack.
    const reports = path.join(fx.dir, 'reports');
    const diag = { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --report-on-signal --report-signal=SIGUSR2 --report-directory=${reports}` };
    const start = (slot: number): W => {
      const w = worker(fx.db, hosts ? { ...fx.env, ...diag, DCM_HOST: `host-${slot}`, DCM_DEBUG: '1' } : { ...fx.env, ...diag }) as W;
      w.ended = null;
      w.stopped = false;
      void w.done.then((r) => (w.ended = r));
      return w;
    };
    const pool: W[] = [start(0), start(1), start(2)];
    const codes: (number | null)[] = [];
    const ends: RunResult[] = [];
    let faults = 0;
    let cuts = 0;
    let restarts = 0;
    const done = () => stepStates(fx.db).every((s) => s.state === 'complete');
    while (faults < FAULTS && !done()) {
      await sleep(300 + Math.floor(Math.random() * 400));
      // Replace the workers that have ended (killed, or woken to a lost lease).
      for (let i = 0; i < pool.length; i++) {
        const w = pool[i];
        if (w.ended) {
          codes.push(w.ended.code);
          ends.push(w.ended);
          pool[i] = start(i);
        }
      }
      const live = pool.filter((w) => !w.ended && !w.stopped);
      if (live.length < 2) continue;
      const w = live[Math.floor(Math.random() * live.length)];
      faults++;
      const dice = Math.random();
      // The last two faults are a cut and a restart if none came by chance.
      const cut = hosts && ((dice >= 0.1 && dice < 0.25) || (faults === FAULTS - 1 && cuts === 0));
      if (hosts && !cut && (dice < 0.1 || (faults === FAULTS && restarts === 0))) {
        // The server crashes and starts again (a second or so): every session is cut, and none can
        // connect meanwhile.
        restarts++;
        own!.restart();
      } else if (cut) {
        // Every connection to the database but this one is cut: workers', heartbeats', launchers'.
        cuts++;
        query(fx.db, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
      } else if (dice < (hosts ? 0.55 : 0.3)) {
        w.stopped = true;
        w.child.kill('SIGSTOP');
        // Continued after longer than its lease (2 s): it finds itself taken over.
        setTimeout(() => {
          w.child.kill('SIGCONT');
          w.stopped = false;
        }, 2_600 + Math.floor(Math.random() * 600));
      } else w.child.kill('SIGKILL');
    }
    expect(faults).toBe(FAULTS);
    if (hosts) expect(cuts).toBeGreaterThan(0);
    if (hosts) expect(restarts).toBeGreaterThan(0);
    // Then left to finish; a worker still stopped is continued by its timer.
    try {
      await waitFor(() => pool.every((w) => w.ended !== null || (!w.stopped && done())), 600_000, 100);
      await waitFor(() => pool.every((w) => w.ended !== null), 600_000, 100);
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await explainHang(fx.db, reports, pool)}`);
    }
    codes.push(...pool.map((w) => w.ended!.code));
    ends.push(...pool.map((w) => w.ended!));
    // Killed (null: by a signal), lost its lease (4), or ended with the strategy (0); or, started
    // while the server was down (a restart), refused at once as an operator's apply would be.
    const refused = (e: RunResult) => e.code === 1 && /^error: cannot open database \S+: /.test(e.stderr);
    expect(ends.filter((e) => e.code !== null && e.code !== 4 && e.code !== 0 && !refused(e)).map((e) => [e.code, e.stderr])).toEqual([]);
    if (hosts) process.stderr.write(`three hosts: ${faults} faults, ${cuts} cuts, ${restarts} restarts, ${ends.filter(refused).length} worker(s) refused at start\n`);
    // The last fault may kill the one worker that would have ended the strategy (another one
    // continued and counted as live has yet to find its lease lost): one more apply ends it, as an
    // operator's would.
    if (!codes.includes(0)) {
      const last = start(0);
      expect((await last.done).code).toBe(0);
    }
    expect(query<{ state: string }>(fx.db, 'SELECT state FROM strategy')).toEqual([{ state: 'complete' }]);
    expect(stepStates(fx.db)).toEqual([{ state: 'complete', n: N }]);
    const runs = fx.readRuns();
    expect(overlapsPerCloud(runs)).toEqual([]);
    const seen = runsPerState(runs);
    expect([...seen].filter(([, n]) => n > 1)).toEqual([]);
    expect(seen.size).toBe(N * 5);
    expect(peakConcurrent(runs)).toBeLessThanOrEqual(WINDOW);
    await waitFor(() => fx.leftovers().length === 0, 60_000, 100);
  }, 900_000);
});
