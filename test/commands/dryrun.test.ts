/**
 * `strategy create --dry-run` (SPEC §4): every check of §5, then the plan, and nothing written —
 * the file's bytes unchanged, or no file at all. The plan is what create then makes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dcm, dirFingerprint, exampleFixtures, expectErrorLine, Fixture, json, stageWindows, withSql } from '../helpers/fleet.js';
import { run, runOk } from '../helpers/inprocess.js';
import { dcmQuick } from '../helpers/quick.js';

const fx = exampleFixtures();

interface PlanRow {
  stage: number | 'total';
  group: string | null;
  window: number | null;
  steps: number;
  'estimated duration': string;
  'estimate from': string;
  subclouds: string | null;
  'plan digest': string | null;
}

async function dryRun(db: string, args: string[]): Promise<PlanRow[]> {
  const r = await runOk(['--db', db, '-f', 'json', 'strategy', 'create', '--dry-run', ...args]);
  return JSON.parse(r.stdout) as PlanRow[];
}

/** The dry run's plan (stage, group, window, steps, first names) next to what create then made. */
async function expectPlanMatchesCreate(dir: string, db: string, args: string[]): Promise<void> {
  const before = dirFingerprint(dir);
  const plan = await dryRun(db, args);
  expect(dirFingerprint(dir)).toEqual(before);

  await runOk(['--db', db, 'strategy', 'create', ...args]);
  const listed = JSON.parse((await runOk(['--db', db, '-f', 'json', 'strategy-step', 'list', '-c', 'cloud', '-c', 'stage number'])).stdout) as { cloud: string; 'stage number': number }[];
  const steps = listed.map((s) => ({ cloud: s.cloud, stage: s['stage number'] }));
  const groups = await withSql(db, (d) => d.prepare('SELECT stage, group_name FROM strategy_stage ORDER BY stage').all()) as { stage: number; group_name: string }[];
  const made = (await stageWindows(db)).map(([stage, window], i) => {
    const names = steps.filter((s) => s.stage === stage).map((s) => s.cloud);
    const more = names.length > 3 ? ` and ${names.length - 3} more` : '';
    return { stage, group: groups[i].group_name, window, steps: names.length, subclouds: names.slice(0, 3).join(', ') + more };
  });
  const planned = plan.filter((r) => r.stage !== 'total').map(({ stage, group, window, steps: n, subclouds }) => ({ stage, group, window, steps: n, subclouds }));
  expect(planned).toEqual(made);
  expect(plan.at(-1)).toMatchObject({ stage: 'total', steps: steps.length });
  // The digest the dry run printed is the one create kept: the same plan, whatever the fleet.
  const digest = plan.at(-1)!['plan digest'];
  expect(digest).toMatch(/^[0-9a-f]{12}$/);
  const kept = await withSql(db, (d) => d.prepare('SELECT extra_args FROM strategy').pluck().get()) as string;
  expect(JSON.parse(kept)).toMatchObject({ plan_digest: digest, plan_pinned: false });
  await runOk(['--db', db, 'strategy', 'delete']);
}

describe('the plan is what create makes', () => {
  // A fleet of 5 groups (one serial) and 300 subclouds in every condition, built once.
  let big: Fixture;
  beforeAll(() => {
    big = new Fixture((db) => {
      const rows: string[] = [];
      for (let i = 1; i <= 300; i++) {
        rows.push(JSON.stringify({
          name: `sc${String(i).padStart(3, '0')}`,
          group: ['Default', 'g2', 'g3', 'g4', 'g5'][(i * 7) % 5],
          management: i % 11 === 0 ? 'unmanaged' : 'managed',
          availability: i % 13 === 0 ? 'offline' : 'online',
          deploy_status: i % 17 === 0 ? 'install-failed' : 'complete',
          patching: i % 5 === 0 ? 'in-sync' : 'out-of-sync',
          kubernetes: i % 3 === 0 ? 'in-sync' : 'out-of-sync',
        }));
      }
      const dcmDb = (args: string[], input?: string) => expect(dcmQuick(['--db', db, ...args], { input }).code).toBe(0);
      dcmDb(['subcloud-group', 'add', '--name', 'g2', '--max_parallel_subclouds', '7']);
      dcmDb(['subcloud-group', 'add', '--name', 'g3', '--update_apply_type', 'serial']);
      dcmDb(['subcloud-group', 'add', '--name', 'g4', '--max_parallel_subclouds', '40']);
      dcmDb(['subcloud-group', 'add', '--name', 'g5', '--max_parallel_subclouds', '3']);
      dcmDb(['subcloud', 'import', '-'], rows.join('\n'));
    });
  });
  afterAll(() => big.cleanup());

  test.each([
    ['patch, every group', ['--type', 'patch']],
    ['kubernetes, --force', ['--type', 'kubernetes', '--force']],
    ['prestage (deploy status counts)', ['--type', 'prestage']],
    ['one group', ['--type', 'patch', '--group', 'g3']],
    ['one subcloud', ['--type', 'firmware', 'sc004']],
    ['a window for every stage', ['--type', 'patch', '--max-parallel-subclouds', '25']],
    ['serial', ['--type', 'sw-deploy', '--release-id', 'r1', '--subcloud-apply-type', 'serial']],
  ])('%s', async (_title, args) => {
    const { dir, db } = big.fresh();
    await expectPlanMatchesCreate(dir, db, args);
  });
});

describe('nothing is written', () => {
  test('on an existing file: bytes unchanged, no -wal or -shm left', async () => {
    const { dir, db } = fx.fleet.fresh();
    const before = dirFingerprint(dir);
    for (const format of ['table', 'json', 'csv', 'value', 'yaml']) {
      const r = await run(['--db', db, '-f', format, 'strategy', 'create', '--type', 'patch', '--dry-run']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('total');
    }
    expect(dirFingerprint(dir)).toEqual(before);
    // Not even a strategy: create itself still works afterwards.
    expect((await run(['--db', db, 'strategy', 'show'])).code).toBe(1);
  });

  test('on a missing file: no file is created, through the built binary too', async () => {
    const { dir } = fx.fleet.fresh(true);
    const db = path.join(dir, 'dcm.db');
    expectErrorLine(await run(['--db', db, 'strategy', 'create', '--type', 'patch', '--dry-run']), 1, 'Strategy has no steps to apply');
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'create', '--type', 'patch', '--dry-run']), 1, 'Strategy has no steps to apply');
    expectErrorLine(await run(['--db', db, 'strategy', 'create', '--type', 'patch', '--dry-run', 's1']), 1, 'Subcloud s1 does not exist');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('the table a person reads', () => {
    const { db } = fx.fleet.fresh();
    const r = dcmQuick(['--db', db, 'strategy', 'create', '--type', 'patch', '--dry-run', '--sim-latency', '1s']);
    expect(r.code).toBe(0);
    // Default (s1, window 2), canary (s4, window 3), rest (s6..s8, serial): 5 states of 1 s each.
    // The digest is the plan's (its own test below): here, where it stands.
    expect(r.stdout.replace(/\b[0-9a-f]{12}\b/, 'DIGEST......')).toBe(
      [
        '+-------+---------+--------+-------+--------------------+---------------+------------+--------------+',
        '| stage | group   | window | steps | estimated duration | estimate from | subclouds  | plan digest  |',
        '+-------+---------+--------+-------+--------------------+---------------+------------+--------------+',
        '|     1 | Default |      2 |     1 | 5.0s               | sim latency   | s1         | None         |',
        '|     2 | canary  |      3 |     1 | 5.0s               | sim latency   | s4         | None         |',
        '|     3 | rest    |      1 |     3 | 15s                | sim latency   | s6, s7, s8 | None         |',
        '| total | None    |   None |     5 | 25s                | sim latency   | None       | DIGEST...... |',
        '+-------+---------+--------+-------+--------------------+---------------+------------+--------------+',
        '',
      ].join('\n'),
    );
  });
});

describe('every check of create, in the same order', () => {
  const cases: [string, string[], 1 | 2, string | RegExp][] = [
    ['a strategy exists', [], 1, "Strategy of type: 'patch' already exists"],
    ['a bad value is not hidden by it', ['--max-parallel-subclouds', '-1'], 1, /^Invalid max-parallel-subclouds value: -1/],
    ['an unknown --sim-fail cloud', ['--sim-fail', 'nosuch=pre check'], 1, "Strategy of type: 'patch' already exists"],
  ];
  test.each(cases)('with a strategy: %s', async (_t, args, code, message) => {
    const { dir, db } = fx.withStrategy.fresh();
    const before = dirFingerprint(dir);
    expectErrorLine(await run(['--db', db, 'strategy', 'create', '--type', 'patch', '--dry-run', ...args]), code, message);
    expect(dirFingerprint(dir)).toEqual(before);
  });

  test.each([
    ['cloud and group', ['s1', '--group', 'rest'], 1],
    ['range', ['--max-parallel-subclouds', '5001'], 1],
    ['unknown subcloud', ['nosuch'], 1],
    ['unknown group', ['--group', 'nosuch'], 1],
    ['in-sync subcloud', ['s3'], 1],
    ['nothing to do', ['s2'], 1],
    ['a bad --sim-fail', ['--sim-fail', 's1=nosuch'], 2],
    ['an unknown --sim-fail cloud', ['--sim-fail', 's9=pre check'], 2],
  ])('dry run and create refuse alike: %s', async (_t, args, code) => {
    const { dir, db } = fx.fleet.fresh();
    const before = dirFingerprint(dir);
    const dry = await run(['--db', db, 'strategy', 'create', '--type', 'patch', '--dry-run', ...args]);
    const real = await run(['--db', db, 'strategy', 'create', '--type', 'patch', ...args]);
    expect(dry.code).toBe(code);
    expect(dry).toEqual(real);
    expect(dirFingerprint(dir)).toEqual(before);
  });
});

describe('estimates', () => {
  test('from the sim latency, then from earlier strategies of the type once one has run', async () => {
    const { db } = fx.fleet.fresh();
    const first = await dryRun(db, ['--type', 'patch', '--sim-latency', '2s']);
    expect(first.map((r) => [r.stage, r['estimated duration'], r['estimate from']])).toEqual([
      [1, '10s', 'sim latency'],
      [2, '10s', 'sim latency'],
      [3, '30s', 'sim latency'],
      ['total', '50s', 'sim latency'],
    ]);
    // A quick run leaves its durations behind; they outlive the strategy and win over the latency.
    await runOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
    expect(dcm(['--db', db, '-q', 'strategy', 'apply']).code).toBe(0);
    await runOk(['--db', db, 'strategy', 'delete']);
    await runOk(['--db', db, 'subcloud', 'update', 's1', 's4', '--sync', 'patching=out-of-sync']);
    const second = await dryRun(db, ['--type', 'patch', '--sim-latency', '1h']);
    expect(second.map((r) => r['estimate from'])).toEqual(['earlier strategies', 'earlier strategies', 'earlier strategies']);
    // Well under a minute: the hour of latency was not used.
    expect(second.at(-1)!['estimated duration']).toMatch(/^\d+(\.\d)?m?s$/);
  });

  test('per config: one exec config\'s durations estimate that config only, never another config nor the sim (issue 34)', async () => {
    const { dir, db } = fx.fleet.fresh();
    const config = (name: string, cmd: string) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, `states:\n  "*": [sh, -c, '${cmd}']\n`, { mode: 0o600 });
      return file;
    };
    const quick = config('quick.yaml', 'true');
    const other = config('other.yaml', 'sleep 0');
    const exec = (file: string) => ['--type', 'patch', '--driver', 'exec', '--exec-config', file];
    // The quick config runs, and leaves its durations behind.
    await runOk(['--db', db, 'strategy', 'create', ...exec(quick)]);
    expect(dcm(['--db', db, '-q', 'strategy', 'apply']).code).toBe(0);
    await runOk(['--db', db, 'strategy', 'delete']);
    await runOk(['--db', db, 'subcloud', 'update', 's1', 's4', '--sync', 'patching=out-of-sync']);
    const from = async (args: string[]) => [...new Set((await dryRun(db, args)).map((r) => r['estimate from']))];
    // The same config: its own durations.
    expect(await from(exec(quick))).toEqual(['earlier strategies']);
    // Another config of the type has nothing to go on (before: the quick config's durations).
    const otherPlan = await dryRun(db, exec(other));
    expect(otherPlan.map((r) => [r['estimated duration'], r['estimate from']])).toEqual(otherPlan.map(() => ['unknown', null]));
    // Nor does the sim take them: its latency.
    expect(await from(['--type', 'patch', '--sim-latency', '2s'])).toEqual(['sim latency']);
  });
});

describe('values outside a fixed set', () => {
  test('--state faild: exit 2, the valid states listed, and the nearest one', async () => {
    const { db } = fx.withStrategy.fresh();
    for (const extra of [[], ['--watch']]) {
      const r = await run(['--db', db, 'strategy-step', 'list', '--state', 'faild', ...extra]);
      expectErrorLine(r, 2, /^invalid --state 'faild' \(did you mean 'failed'\?\); valid states: 'initial', 'complete', 'failed', 'aborted', 'deferred', 'pre check', .*'prestaging-images'$/);
    }
    // A state of any type is valid, and on a missing file too.
    expect((await run(['--db', db, 'strategy-step', 'list', '--state', 'prestage-prepare'])).code).toBe(0);
    expect((await run(['--db', path.join(path.dirname(db), 'none.db'), 'strategy-step', 'list', '--state', 'failed'])).code).toBe(0);
    expectErrorLine(await run(['--db', path.join(path.dirname(db), 'none.db'), 'strategy-step', 'list', '--state', 'FAILED']), 2, /^invalid --state 'FAILED' \(did you mean 'failed'\?\)/);
  });

  test('--sim-fail for an unknown cloud: exit 2, a few names and how many more', async () => {
    const { dir, db } = fx.fleet.fresh();
    const before = dirFingerprint(dir);
    const r = await run(['--db', db, 'strategy', 'create', '--type', 'patch', '--sim-fail', 's9=pre check']);
    expectErrorLine(r, 2, "Invalid --sim-fail cloud 's9' (did you mean 's1'?); known subclouds include 's1', 's2', 's3', 's4', 's5' and 3 more");
    expectErrorLine(
      await run(['--db', db, 'strategy', 'create', '--type', 'patch', '--sim-fail', 'zzzzzz=pre check']),
      2,
      "Invalid --sim-fail cloud 'zzzzzz'; known subclouds include 's1', 's2', 's3', 's4', 's5' and 3 more",
    );
    expect(dirFingerprint(dir)).toEqual(before);
    // A known cloud is fine.
    expect((await run(['--db', db, 'strategy', 'create', '--type', 'patch', '--sim-fail', 's6=pre check'])).code).toBe(0);
    expect(json<{ state: string }[]>(await run(['--db', db, '-f', 'json', 'strategy-step', 'list']))).toHaveLength(5);
  });
});
