/**
 * The smoke of the end-to-end suite (jest.smoke.config.js), run by .ci/run on every Node version
 * after the first, where the whole suite ran: the native addon loads in this node, and the built
 * dcm applies a strategy with each driver, sim and exec, to the end. Small on purpose: what a
 * Node version can break (the addon's ABI, child processes, the CLI's ESM loading), not behaviour.
 */
import { afterEach, expect, test } from '@jest/globals';
import { dcmOk } from '../helpers/cli.js';
import { requireCjs } from '../../src/platform/cjs.js';
import { spawnDcm, steps, tempPerTest } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';

const temp = tempPerTest();
let f: ExecFixture | undefined;
afterEach(() => {
  f?.cleanup();
  f = undefined;
});

test(`the native addon loads in node ${process.version}`, () => {
  const Database = requireCjs('better-sqlite3') as new (file: string) => { prepare(sql: string): { get(): unknown }; close(): void };
  const db = new Database(':memory:');
  expect(db.prepare('SELECT sqlite_version() AS v').get()).toEqual({ v: expect.stringMatching(/^3\.\d+\.\d+$/) });
  db.close();
});

test('an apply with the sim driver, to the end', async () => {
  const t = temp();
  dcmOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3', 's4']);
  dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '5ms..20ms']);
  const r = await spawnDcm(['--db', t.db, 'strategy', 'apply']).done;
  expect(r.code).toBe(0);
  expect(steps(t.db).map((s) => s.state)).toEqual(['complete', 'complete', 'complete', 'complete']);
});

test('an apply with the exec driver, to the end: every state of every subcloud ran once', async () => {
  f = execFixture();
  const fx = f;
  dcmOk(['--db', fx.db, 'subcloud', 'add', 'e1', 'e2', 'e3']);
  const cfg = fx.config(`states:\n  "*": [${fx.step}, "{cloud}", "{state}"]\n`);
  dcmOk(['--db', fx.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
  const r = await spawnDcm(['--db', fx.db, 'strategy', 'apply'], fx.env).done;
  expect(r.code).toBe(0);
  expect(steps(fx.db).map((s) => s.state)).toEqual(['complete', 'complete', 'complete']);
  const runs = fx.readRuns();
  const perCloud = new Set(runs.map((x) => `${x.cloud}|${x.state}`));
  expect(perCloud.size).toBe(runs.length);
  expect(runs.length).toBeGreaterThanOrEqual(3);
  expect(fx.leftovers()).toEqual([]);
});
