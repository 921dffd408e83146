/**
 * Abort and Ctrl-C with exec runs in flight (SPEC §6, §7.2): abort and a first Ctrl-C let runs go
 * on to their end; a second Ctrl-C kills every run's process group (children included), the runs
 * are `interrupted`, and dcm exits leaving no process it started.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { dcm, sleep, waitFor } from '../helpers/cli.js';
import { history, killLeftovers, names, spawnDcm, steps } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

function startedRuns(db: string): number {
  const d = new Database(db, { readonly: true });
  try {
    return (d.prepare(`SELECT count(*) AS n FROM step_history WHERE outcome = 'running' AND pid IS NOT NULL`).get() as { n: number }).n;
  } finally {
    d.close();
  }
}

function setup(n: number, window: number, yaml: string): void {
  dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...names(n)]);
  dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'firmware', '--max-parallel-subclouds', String(window), '--driver', 'exec', '--exec-config', f.config(yaml)]);
}

describe('exec driver: abort and Ctrl-C', () => {
  // Claim, README "Running real updates", abort: starts nothing new and lets the runs in flight go on to their end; no process left.
  test('abort lets the runs in flight finish; nothing new starts; no process left', async () => {
    f = execFixture();
    // The first state waits for a gate the test opens once the abort has taken effect: the two in
    // flight cannot end (and free their slots) before it, however slow the machine.
    const gate = path.join(f.dir, 'gate');
    setup(6, 2, `
states:
  importing firmware: {run: "while [ ! -e ${gate} ]; do sleep 0.05; done; ${f.step} import"}
  "*": [${f.step}, rest]
`);
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => startedRuns(f.db) === 2, 20_000);
    dcmQuickOk(['--db', f.db, 'strategy', 'abort']);
    await waitFor(() => steps(f.db).filter((s) => s.state === 'aborted').length === 4, 20_000);
    fs.writeFileSync(gate, '');
    const r = await apply.done;
    expect(r.code).toBe(3);
    const runs = f.readRuns();
    // The two in flight ran to their end (every state); the other four never started.
    expect(new Set(runs.map((x) => x.cloud))).toEqual(new Set(['s1', 's2']));
    expect(runs.filter((x) => x.state === 'importing firmware')).toHaveLength(2);
    expect(history(f.db).every((h) => h.outcome === 'ok')).toBe(true);
    expect(steps(f.db).filter((s) => s.state === 'aborted')).toHaveLength(4);
    expect(f.leftovers()).toEqual([]);
  }, 60_000);

  // Claim, README "Running real updates", Ctrl-C: the first waits for the runs; a second sends SIGTERM, then SIGKILL, to every group
  // (children too); those runs read `interrupted`; dcm never exits leaving a process it started.
  test('a first Ctrl-C waits for the runs; a second kills their groups, children too, and leaves no process', async () => {
    f = execFixture();
    // The first run of the first state starts a child in the background and waits; any other
    // run logs itself and ends.
    setup(3, 3, `
defaults: {kill_grace: 300ms, timeout: 20s}
states:
  "*":
    run: 'case "$DCM_STATE$DCM_RESUMED" in "importing firmware") sleep 1000 & wait;; esac; exec ${f.step} run'
`);
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => startedRuns(f.db) === 3, 20_000);
    apply.child.kill('SIGINT');
    await sleep(300);
    // Still waiting: the runs go on.
    expect(apply.child.exitCode).toBe(null);
    expect(f.leftovers().length).toBeGreaterThanOrEqual(6);
    apply.child.kill('SIGINT');
    const r = await apply.done;
    expect(r.code).toBe(130);
    expect(f.leftovers()).toEqual([]);
    expect(history(f.db).map((h) => h.outcome)).toEqual(['interrupted', 'interrupted', 'interrupted']);

    // Resume: each interrupted run runs again as attempt 2, told it was resumed.
    const again = dcm(['--db', f.db, 'strategy', 'apply'], { env: f.env });
    expect(again.code).toBe(0);
    expect(f.readRuns()).toHaveLength(3 * 4);
    const first = f.readRuns().filter((x) => x.state === 'importing firmware');
    expect(first.map((x) => [x.attempt, x.resumed])).toEqual([
      [2, true],
      [2, true],
      [2, true],
    ]);
    expect(f.leftovers()).toEqual([]);
  }, 60_000);
});
