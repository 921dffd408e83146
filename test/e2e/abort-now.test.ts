/**
 * Issue 49, item 1: an abort that ends. A site that accepts TCP and never answers (a listener on
 * 127.0.0.1 that accepts and stays silent: ssh waits for its banner for ever) holds its run until
 * the state's timeout (2 h here). `strategy abort --now` stops such runs as a second Ctrl-C does,
 * with an orchestrator running (it sees the request through the store) or with none (the command
 * stops them itself, after a kill -9 of apply); an `aborting` strategy whose orchestrator is gone
 * is aborted now, deleted or resolved; an apply that finishes an abort never starts a state.
 *
 * Real processes throughout: the built CLI, a real ssh client against the silent listener, the
 * exec driver's launcher and wrapper. "No process of the run left" is judged by a marker every
 * process of the runs inherits (test/helpers/exec.ts), whatever its process group.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { dcm, waitFor } from '../helpers/cli.js';
import { history, killLeftovers, names, spawnDcm, steps, strategyState } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { dcmQuickOk } from '../helpers/quick.js';
import { pgTestUrl } from '../helpers/pg-databases.js';

if (spawnSync('sh', ['-c', 'command -v ssh']).status !== 0) throw new Error('ssh is not installed: apt-get install -y openssh-client (as .ci/run does)');

/** A site that accepts TCP and never says a word. */
let silent: net.Server;
let port = 0;
const sockets = new Set<net.Socket>();
beforeAll(async () => {
  silent = net.createServer((c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  port = (silent.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
});

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

/** Three subclouds, window 2, every state an ssh to the silent site (timeout 2h, as the recipe). */
function hangingStrategy(): void {
  f = execFixture();
  dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...names(3)]);
  const cfg = f.config(`
defaults: {timeout: 2h, kill_grace: 3s}
states:
  "*": ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p ${port} 127.0.0.1 true
`);
  dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--max-parallel-subclouds', '2', '--driver', 'exec', '--exec-config', cfg]);
}

/** Both runs of the window going: their ssh processes exist (and wait on the silent site). */
async function runsGoing(): Promise<void> {
  await waitFor(() => history(f.db).filter((h) => h.outcome === 'running').length === 2 && f.leftovers().length >= 4, 30_000);
}

const ABORTED_NOW = /^pre check: stopped by abort --now \(\S+@\S+: the site hangs\)$/;

describe('strategy abort --now', () => {
  test('with an orchestrator running: it stops the runs in flight, the steps end aborted with the reason, apply exits 3', async () => {
    hangingStrategy();
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await runsGoing();
    // A second plain abort while the first waits says how to stop now, and changes nothing.
    expect(dcm(['--db', f.db, 'strategy', 'abort']).code).toBe(0);
    await waitFor(() => strategyState(f.db) === 'aborting', 10_000);
    const again = dcm(['--db', f.db, 'strategy', 'abort']);
    expect(again.code).toBe(1);
    // (On a server, its worker: the PostgreSQL pass runs this file too.)
    expect(again.stderr).toMatch(/^error: Strategy in state aborting cannot be aborted: the runs in flight are waited for by (the orchestrator|its 1 worker\(s\)) \(pid \d+ on \S+\); `dcm strategy abort --now` stops them\n$/);
    const now = dcm(['--db', f.db, 'strategy', 'abort', '--now', '--reason', 'the site hangs']);
    expect(now.code).toBe(0);
    expect(now.stderr).toMatch(/^abort now: (the orchestrator|its 1 worker\(s\)) \(pid /);
    const r = await apply.done;
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/abort now: stopping 2 run\(s\) in flight/);
    expect(r.stderr).toMatch(/strategy aborted: 3 aborted/);
    const byCloud = new Map(steps(f.db).map((s) => [s.cloud, s]));
    expect(byCloud.get('s1')!.details).toMatch(ABORTED_NOW);
    expect(byCloud.get('s2')!.details).toMatch(ABORTED_NOW);
    expect(byCloud.get('s3')!.details).toBe('aborted before start');
    expect(history(f.db).map((h) => [h.cloud, h.attempt, h.outcome])).toEqual([['s1', 1, 'interrupted'], ['s2', 1, 'interrupted']]);
    expect(f.leftovers()).toEqual([]);
  }, 60_000);

  test('after a kill -9 of apply: abort leaves it aborting, delete refuses, abort --now stops the runs and ends it, delete takes it', async () => {
    hangingStrategy();
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await runsGoing();
    apply.child.kill('SIGKILL');
    await apply.done;
    const plain = dcm(['--db', f.db, 'strategy', 'abort']);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toMatch(/still running, left for the next apply: s1 \(pre check, pid \d+\), s2 \(pre check, pid \d+\).*`dcm strategy abort --now` stops it/);
    expect(strategyState(f.db)).toBe('aborting');
    const del = dcm(['--db', f.db, 'strategy', 'delete']);
    expect(del.code).toBe(1);
    expect(del.stderr).toMatch(/cannot delete the strategy while a run of the strategy is still going: s1 .*or stop it: `dcm strategy abort --now`/);
    const now = dcm(['--db', f.db, 'strategy', 'abort', '--now', '--reason', 'the site hangs']);
    expect(now.code).toBe(0);
    expect(now.stderr).toMatch(/abort now: stopped 2 run\(s\): s1 \(pre check, pid \d+\), s2 \(pre check, pid \d+\)/);
    expect(strategyState(f.db)).toBe('aborted');
    expect(steps(f.db).map((s) => s.details).slice(0, 2).every((d) => ABORTED_NOW.test(d))).toBe(true);
    expect(history(f.db).map((h) => h.outcome)).toEqual(['interrupted', 'interrupted']);
    expect(f.leftovers()).toEqual([]);
    expect(dcm(['--db', f.db, 'strategy', 'delete']).code).toBe(0);
  }, 60_000);

  // A run that ended ok at its site is never recorded as cut off: found by the simulator (seed
  // 331138515: an abort with no apply closed it `interrupted` after it had ended ok).
  // The apply then finishes the abort as abort asks (SPEC §6): a plain one lets the subcloud run to
  // its end, a --now one leaves its step aborted in its next state, not started.
  test.each([[[], 'complete'], [['--now'], 'aborted']])('after a kill -9 of apply, a run that ended meanwhile is left by abort %j to the next apply, which records its end', async (now, s1) => {
    f = execFixture();
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...names(2)]);
    const go = `${f.dir}/go`;
    const cfg = f.config(`
defaults: {timeout: 2h, kill_grace: 3s}
states:
  "*": touch ${go}.started; while [ ! -e ${go} ]; do sleep 0.1; done
`);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--max-parallel-subclouds', '1', '--driver', 'exec', '--exec-config', cfg]);
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    // The state's own command runs (not only its launcher, which a kill -9 may catch still starting it).
    await waitFor(() => fs.existsSync(`${go}.started`), 30_000);
    apply.child.kill('SIGKILL');
    await apply.done;
    // The site finishes its state with dcm gone: its wrapper writes exit 0.
    fs.writeFileSync(go, '');
    await waitFor(() => f.leftovers().length === 0, 30_000);
    const abort = dcm(['--db', f.db, 'strategy', 'abort', ...now]);
    expect(abort.code).toBe(0);
    expect(abort.stderr).toMatch(/ended while no orchestrator ran, left for the next apply to read how: s1 \(pre check, ended\); the strategy stays aborting: `dcm strategy apply` records their ends and ends the abort/);
    expect(strategyState(f.db)).toBe('aborting');
    expect(history(f.db).map((h) => [h.cloud, h.state, h.outcome])).toEqual([['s1', 'pre check', 'running']]);
    const r = dcm(['--db', f.db, 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(3);
    expect(history(f.db).map((h) => [h.cloud, h.state, h.outcome])[0]).toEqual(['s1', 'pre check', 'ok']);
    expect(history(f.db).every((h) => h.outcome === 'ok')).toBe(true);
    expect(steps(f.db).map((s) => [s.cloud, s.state])).toEqual([['s1', s1], ['s2', 'aborted']]);
    expect(strategyState(f.db)).toBe('aborted');
  }, 60_000);

  test('an apply that finishes an abort starts no state, not even the one it was cut off in', async () => {
    hangingStrategy();
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await runsGoing();
    dcm(['--db', f.db, 'strategy', 'abort']);
    await waitFor(() => strategyState(f.db) === 'aborting', 10_000);
    // Ctrl-C twice: the runs are stopped, the strategy stays aborting, and Ctrl-C says so.
    apply.child.kill('SIGINT');
    await waitFor(() => apply.stderr().includes('SIGINT:'), 10_000);
    apply.child.kill('SIGINT');
    const first = await apply.done;
    expect(first.code).toBe(130);
    expect(first.stderr).toContain('the strategy stays aborting: run `dcm strategy apply` to finish the abort, or `dcm strategy abort --now`');
    expect(first.stderr).toMatch(/\nstrategy aborting: /);
    const r = dcm(['--db', f.db, 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('finishing the abort: 2 step(s) aborted');
    // Attempt 1 of each, cut off by the Ctrl-C: no attempt 2 of the hung state.
    expect(history(f.db).map((h) => [h.cloud, h.state, h.attempt])).toEqual([['s1', 'pre check', 1], ['s2', 'pre check', 1]]);
    expect(steps(f.db).map((s) => [s.state, s.details])).toEqual([
      ['aborted', 'aborted in state pre check'],
      ['aborted', 'aborted in state pre check'],
      ['aborted', 'aborted before start'],
    ]);
    expect(f.leftovers()).toEqual([]);
  }, 60_000);

  test('an aborting strategy whose orchestrator is gone, with nothing running, is deleted', async () => {
    hangingStrategy();
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await runsGoing();
    dcm(['--db', f.db, 'strategy', 'abort']);
    await waitFor(() => strategyState(f.db) === 'aborting', 10_000);
    apply.child.kill('SIGINT');
    await waitFor(() => apply.stderr().includes('SIGINT:'), 10_000);
    apply.child.kill('SIGINT');
    await apply.done;
    const del = dcm(['--db', f.db, 'strategy', 'delete']);
    expect(del.stderr).toMatch(/^kept as strategy \d+: /);
    expect(del.code).toBe(0);
    expect(dcm(['--db', f.db, 'strategy', 'show']).code).toBe(1);
  }, 60_000);
});

// On a server, resolve is the several hosts' (test/pg/workers-hosts.test.ts).
(pgTestUrl() ? describe.skip : describe)('strategy-step resolve on a file', () => {
  test('a run killed with dcm (no status left) is resolved by the operator; a live one is refused; the abort ends with the last', async () => {
    hangingStrategy();
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await runsGoing();
    apply.child.kill('SIGKILL');
    await apply.done;
    dcm(['--db', f.db, 'strategy', 'abort']);
    expect(strategyState(f.db)).toBe('aborting');
    // Still going: it has not ended, whatever the operator says.
    const live = dcm(['--db', f.db, 'strategy-step', 'resolve', 's1', '--as', 'ok']);
    expect(live.code).toBe(1);
    expect(live.stderr).toMatch(/^error: s1's run \(pre check, attempt 1\) is still going \(pid \d+\): it has not ended; `dcm strategy abort --now` stops it, or wait for it\n$/);
    // The site went down with the runs: every process of theirs killed, wrappers included: no status.
    for (const pid of f.leftovers()) process.kill(pid, 'SIGKILL');
    await waitFor(() => f.leftovers().length === 0, 10_000);
    const ok = dcm(['--db', f.db, 'strategy-step', 'resolve', 's1', '--as', 'ok', '--reason', 'done by hand', '-f', 'value', '-c', 'state']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe('updating patches\n');
    expect(strategyState(f.db)).toBe('aborting');
    const failed = dcm(['--db', f.db, 'strategy-step', 'resolve', 's2', '--as', 'failed', '-f', 'value', '-c', 'state', '-c', 'details']);
    expect(failed.code).toBe(0);
    expect(failed.stdout).toMatch(/^failed\npre check: resolved as failed by \S+@\S+\n$/);
    expect(failed.stderr).toContain('the strategy is aborted: nothing of it runs any more');
    expect(strategyState(f.db)).toBe('aborted');
    expect(history(f.db).map((h) => [h.cloud, h.outcome])).toEqual([['s1', 'ok'], ['s2', 'failed']]);
    expect(steps(f.db).map((s) => [s.cloud, s.state])).toEqual([['s1', 'aborted'], ['s2', 'failed'], ['s3', 'aborted']]);
  }, 60_000);
});
