/**
 * Failures end to end (SPEC §6, §7): injected failures with and without --stop-on-failure,
 * per-state timeouts, and a new strategy after a partly failed one.
 */
import { describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { statesOf } from '../../src/domain/types.js';
import { dcm, waitFor } from '../helpers/cli.js';
import { createFleet, flights, history, micros, names, okRunProblems, steps, strategyState, spawnDcm, tempPerTest } from '../helpers/history.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const PATCH = statesOf('patch');

const temp = tempPerTest();

const fresh = (): string => temp().db;

/** Each step's state and details, from one `strategy-step list`. */
function stepsOf(db: string): { state: Record<string, string>; details: Record<string, string> } {
  const st = steps(db);
  return {
    state: Object.fromEntries(st.map((s) => [s.cloud, s.state])),
    details: Object.fromEntries(st.map((s) => [s.cloud, s.details])),
  };
}
const stateOf = (db: string) => stepsOf(db).state;

/** The patching sync status of each subcloud, read from the file. */
function patchingSync(file: string): Record<string, string> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare('SELECT name, patching_sync AS sync FROM subcloud').all() as { name: string; sync: string }[];
    return Object.fromEntries(rows.map((r) => [r.name, r.sync]));
  } finally {
    db.close();
  }
}

describe('apply: failures', () => {
  test('without --stop-on-failure: failed steps say <state>: <reason>, the rest completes, strategy failed, exit 1', () => {
    const db = fresh();
    createFleet(db, names(8), [
      '--max-parallel-subclouds', '3', '--sim-latency', '0..5ms',
      '--sim-fail', 's2=updating patches', '--sim-fail', 's5=pre check', '--sim-fail', 's8=finishing patch strategy',
    ]);
    const r = dcm(['--db', db, 'strategy', 'apply', '-f', 'json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).state).toBe('failed');
    expect(strategyState(db)).toBe('failed');
    // Off a terminal: one line per subcloud that ends, and the closing summary names the failures.
    expect(r.stderr).toMatch(/s2: failed \(updating patches: injected failure\)\n/);
    expect(r.stderr).not.toMatch(/ -> /);
    expect(r.stderr).toMatch(/failed subclouds \(3\):\n(  s\d: [^\n]+\n){3}/);
    expect(r.stderr).toMatch(/strategy failed: 5 complete, 3 failed/);
    const after = stepsOf(db);
    expect(after.state).toEqual({
      s1: 'complete', s2: 'failed', s3: 'complete', s4: 'complete',
      s5: 'failed', s6: 'complete', s7: 'complete', s8: 'failed',
    });
    expect(after.details).toMatchObject({
      s2: 'updating patches: injected failure',
      s5: 'pre check: injected failure',
      s8: 'finishing patch strategy: injected failure',
      s1: '',
    });
    const runs = history(db);
    expect(okRunProblems(runs, ['s1', 's3', 's4', 's6', 's7'], PATCH)).toEqual([]);
    expect(runs.filter((h) => h.cloud === 's2').map((h) => [h.state, h.outcome, h.details])).toEqual([
      ['pre check', 'ok', ''],
      ['updating patches', 'failed', 'injected failure'],
    ]);
    // A complete step brings its subcloud's patching endpoint in-sync; a failed one leaves it.
    const s1 = JSON.parse(dcmQuickOk(['--db', db, 'subcloud', 'show', 's1', '-f', 'json']).stdout) as Record<string, string>;
    expect(s1.patching_sync_status).toBe('in-sync');
    expect(patchingSync(db)).toEqual({
      s1: 'in-sync', s2: 'out-of-sync', s3: 'in-sync', s4: 'in-sync',
      s5: 'out-of-sync', s6: 'in-sync', s7: 'in-sync', s8: 'out-of-sync',
    });
  });

  test('--stop-on-failure: no subcloud starts after the first failure, in-flight ones run to their end, the rest stay initial', () => {
    const db = fresh();
    createFleet(db, names(10), [
      '--max-parallel-subclouds', '3', '--sim-latency', '20ms..40ms', '--stop-on-failure',
      '--sim-fail', 's5=updating patches',
    ]);
    const r = dcm(['--db', db, 'strategy', 'apply']);
    expect(r.code).toBe(1);
    expect(strategyState(db)).toBe('failed');
    expect(r.stderr).toMatch(/s5 failed: stop on failure, no new subcloud will start/);

    const runs = history(db);
    const failure = runs.find((h) => h.outcome === 'failed')!;
    expect(failure).toMatchObject({ cloud: 's5', state: 'updating patches', details: 'injected failure' });
    const failedAt = micros(failure.finished_at!);
    const f = flights(runs);
    const started = [...f.keys()];
    // No subcloud starts after the failure; those in flight at that moment run to their end.
    for (const fl of f.values()) expect(fl.start).toBeLessThan(failedAt);
    const inFlight = [...f.values()].filter((fl) => fl.cloud !== 's5' && fl.end > failedAt).map((fl) => fl.cloud);
    expect(inFlight.length).toBeGreaterThan(0);
    const { state: st, details } = stepsOf(db);
    for (const c of started) expect(st[c]).toBe(c === 's5' ? 'failed' : 'complete');
    for (const c of names(10).filter((n) => !started.includes(n))) expect(st[c]).toBe('initial');
    expect(Object.values(st).filter((s) => s === 'initial').length).toBeGreaterThan(0);
    expect(details.s5).toBe('updating patches: injected failure');
    expect(okRunProblems(runs, started.filter((c) => c !== 's5'), PATCH)).toEqual([]);
    // An ended strategy is not applied again.
    const again = dcm(['--db', db, 'strategy', 'apply']);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('error: Strategy in state failed cannot be applied\n');
  });

  test('--state-timeout 50ms with latency 200ms: steps fail "<state>: timed out after 50ms", history outcome timeout', () => {
    const db = fresh();
    createFleet(db, names(3), ['--max-parallel-subclouds', '3', '--sim-latency', '200ms', '--state-timeout', '50ms']);
    const r = dcm(['--db', db, '-q', 'strategy', 'apply']);
    expect(r.code).toBe(1);
    expect(strategyState(db)).toBe('failed');
    const after = stepsOf(db);
    expect(after.state).toEqual({ s1: 'failed', s2: 'failed', s3: 'failed' });
    expect(Object.values(after.details)).toEqual(Array(3).fill('pre check: timed out after 50ms'));
    const runs = history(db);
    expect(runs.map((h) => [h.cloud, h.state, h.outcome, h.details])).toEqual(
      names(3).map((c) => [c, 'pre check', 'timeout', 'timed out after 50ms']),
    );
    for (const h of runs) {
      const took = (micros(h.finished_at!) - micros(h.started_at)) / 1000;
      // Not before its timeout; that it was cut there (not run to its latency) is the outcome above.
      expect(took).toBeGreaterThanOrEqual(45);
    }
  });

  test('a step changed behind the orchestrator: apply stops with one error line, exit 1, at once (no timer keeps it alive)', async () => {
    const db = fresh();
    createFleet(db, names(2), ['--max-parallel-subclouds', '2', '--sim-latency', '300ms'], 'kubernetes');
    const apply = spawnDcm(['--db', db, 'strategy', 'apply', '-v']);
    await waitFor(() => (apply.stderr().match(/ -> /g) ?? []).length >= 2, 20_000, 5);
    const raw = new Database(db);
    raw.prepare("UPDATE strategy_step SET state = 'aborted' WHERE subcloud_id = (SELECT id FROM subcloud WHERE name = 's1')").run();
    raw.close();
    // How soon it exits is timed by the bench (figure 9-changed), not bounded here.
    const r = await apply.done;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\nerror: step of s1 is no longer in state kube upgrade pre check: it was changed by another process; [^\n]*\n$/);
    // Nothing was overwritten, and the file is left for a resume.
    expect(stateOf(db).s1).toBe('aborted');
    expect(strategyState(db)).toBe('applying');
  });

  test('a new patch strategy after a partly failed one picks up only the subclouds not in-sync', () => {
    const db = fresh();
    dcmQuickOk(['--db', db, 'subcloud', 'add', ...names(6)]);
    dcmQuickOk(['--db', db, 'subcloud', 'update', 's6', '--management', 'unmanaged']);
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '4', '--sim-latency', '0..3ms',
      '--sim-fail', 's2=creating VIM patch strategy', '--sim-fail', 's5=pre check']);
    expect(dcm(['--db', db, '-q', 'strategy', 'apply']).code).toBe(1);
    dcmQuickOk(['--db', db, 'strategy', 'delete']);

    dcmQuickOk(['--db', db, 'patch-strategy', 'create', '--max-parallel-subclouds', '4', '--sim-latency', '0..3ms']);
    expect(steps(db).map((s) => [s.cloud, s.state])).toEqual([
      ['s2', 'initial'],
      ['s5', 'initial'],
    ]);
    const r = dcm(['--db', db, '-q', 'patch-strategy', 'apply']);
    expect(r.code).toBe(0);
    expect(stateOf(db)).toEqual({ s2: 'complete', s5: 'complete' });
    expect(patchingSync(db)).toMatchObject({ s1: 'in-sync', s2: 'in-sync', s5: 'in-sync', s6: 'out-of-sync' });
    // s2 starts over on the subcloud: the new strategy is a new campaign for the simulator.
    expect(okRunProblems(history(db), ['s2', 's5'], PATCH)).toEqual([]);
    dcmQuickOk(['--db', db, 'strategy', 'delete']);
    const none = dcmQuick(['--db', db, 'strategy', 'create', '--type', 'patch']);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^warning: left out 6 of 6 subclouds:\n(.*\n)+error: Strategy has no steps to apply\n$/);
  });
});
