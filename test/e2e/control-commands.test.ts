/**
 * The control commands on their own (SPEC §4 "Control while applying"): several clouds at create,
 * update, pause and resume refused in the wrong state, retry after failures, the group warning.
 * What a running orchestrator does with them is in control-apply.test.ts.
 */
import { describe, expect, test } from '@jest/globals';
import { statesOf } from '../../src/domain/types.js';
import { dcm, waitFor } from '../helpers/cli.js';
import { expectErrorLine, expectRefused, json, stageWindows } from '../helpers/fleet.js';
import { countBy, createFleet, history, names, okRunProblems, spawnDcm, steps, strategyState, tempPerTest } from '../helpers/history.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const PATCH = statesOf('patch');

const temp = tempPerTest();

function fresh(): { db: string; dir: string } {
  const t = temp();
  return t;
}

describe('strategy create with several clouds', () => {
  test('one stage, in the order given; each name checked as a single one is', async () => {
    const t = fresh();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(9)]);
    dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's4', '--sync', 'patching=in-sync']);
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'create', '--type', 'patch', 's7', 'nope', 's1'], 1, 'Subcloud nope does not exist');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'create', '--type', 'patch', 's7', 's4'], 1, 'Subcloud s4 does not require patching');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'create', '--type', 'patch', 's7', 's1', '--group', 'Default'], 1, 'The cloud_name and group options are mutually exclusive.');
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', 's9', 's1', 's7', 's1']);
    expect(steps(t.db).map((s) => [s.cloud, s.stage])).toEqual([['s9', 1], ['s1', 1], ['s7', 1]]);
    expect(await stageWindows(t.db)).toEqual([[1, 2]]);
  });
});

describe('strategy update', () => {
  test('windows of every stage or of one, the failure budget; the strategy record is printed', async () => {
    const t = fresh();
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'g2', '--max_parallel_subclouds', '3']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(4)]);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(4, 't'), '--group', 'g2']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-failures', '2']);
    expect(await stageWindows(t.db)).toEqual([[1, 2], [2, 3]]);
    const r = dcmQuickOk(['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '7', '-f', 'json']);
    expect(json<{ state: string }>(r).state).toBe('initial');
    expect(await stageWindows(t.db)).toEqual([[1, 7], [2, 7]]);
    dcmQuickOk(['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '1', '--stage', '2']);
    expect(await stageWindows(t.db)).toEqual([[1, 7], [2, 1]]);
    dcmQuickOk(['--db', t.db, 'strategy', 'update', '--max-failures', '25%']);
    const status = json<Record<string, unknown>>(dcmQuickOk(['--db', t.db, 'strategy', 'status', '-f', 'json']));
    expect(status['max failures']).toBe('25% (2 of 8 steps)');
    // strategy show keeps dcmanager's fields (golden tests): no budget row there.
    expect(Object.keys(json<Record<string, unknown>>(dcmQuickOk(['--db', t.db, 'strategy', 'show', '-f', 'json'])))).not.toContain('max failures');
  });

  test('the record shows the window set for every stage; one stage\'s new window is said on stderr', async () => {
    const t = fresh();
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'g2', '--max_parallel_subclouds', '3']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(2)]);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(2, 't'), '--group', 'g2']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch']);
    // The record says the server's 2; each stage runs in its group's own window.
    expect(json<Record<string, unknown>>(dcmQuickOk(['--db', t.db, 'strategy', 'show', '-f', 'json']))['max parallel subclouds']).toBe(2);
    expect(await stageWindows(t.db)).toEqual([[1, 2], [2, 3]]);
    let r = dcmQuickOk(['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '2', '-f', 'json']);
    expect(json<Record<string, unknown>>(r)['max parallel subclouds']).toBe(2);
    expect(r.stderr).toBe('');
    // Kept in the file: show says it too.
    expect(json<Record<string, unknown>>(dcmQuickOk(['--db', t.db, 'strategy', 'show', '-f', 'json']))['max parallel subclouds']).toBe(2);
    r = dcmQuickOk(['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '5', '--stage', '2', '-f', 'json']);
    // One stage's window is not the strategy's: the record keeps its value and stderr says what changed.
    expect(json<Record<string, unknown>>(r)['max parallel subclouds']).toBe(2);
    expect(r.stderr).toBe('stage 2 now runs 5 at a time; the other stages keep their windows\n');
    expect(await stageWindows(t.db)).toEqual([[1, 2], [2, 5]]);
    expect(dcmQuickOk(['--db', t.db, '-q', 'strategy', 'update', '--max-parallel-subclouds', '4', '--stage', '2']).stderr).toBe('');
  });

  test('a stage that has ended keeps the window it ran with: --stage K refused, without --stage skipped and said', async () => {
    const t = fresh();
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'g2', '--max_parallel_subclouds', '3']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(2)]);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...names(2, 't'), '--group', 'g2']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0ms', '--sim-fail', `t1=${PATCH[0]}`]);
    expect(dcm(['--db', t.db, '-q', 'strategy', 'apply']).code).toBe(1);
    // Stage 1 ended complete; retry puts t1 (stage 2) back: the strategy is initial again.
    dcmQuickOk(['--db', t.db, '-q', 'strategy', 'retry']);
    expect(await stageWindows(t.db)).toEqual([[1, 2], [2, 3]]);
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '1', '--stage', '1'], 1, 'Stage 1 has ended and cannot be updated (it ran with window 2)');
    const r = dcmQuickOk(['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '1']);
    expect(await stageWindows(t.db)).toEqual([[1, 2], [2, 1]]);
    expect(r.stderr).toBe('stage 1 has ended and keeps the window it ran with (2)\n');
  });

  test('bad values are usage errors before the file is read; a missing stage, a wrong state: exit 1, nothing changed', () => {
    const t = fresh();
    expectErrorLine(dcmQuick(['--db', t.db, 'strategy', 'update']), 2, /give --max-parallel-subclouds N/);
    expectErrorLine(dcmQuick(['--db', t.db, 'strategy', 'update', '--max-failures', '0%']), 2, /--max-failures/);
    expectErrorLine(dcmQuick(['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '0']), 2, /Invalid max-parallel-subclouds value: 0/);
    expectErrorLine(dcmQuick(['--db', t.db, 'strategy', 'update', '--stage', '1']), 2, '--stage needs --max-parallel-subclouds, --start-rate, --stage-max-failures, --stage-gate or --gate-check');
    expectErrorLine(dcmQuick(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-failures', '2', '--stop-on-failure']), 2, '--stop-on-failure is --max-failures 1: give one of them');
    createFleet(t.db, names(3), ['--sim-latency', '0ms']);
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '2', '--stage', '2'], 1, 'Strategy has no stage 2 (it has stage 1)');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'pause'], 1, 'Strategy in state initial cannot be paused');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'resume'], 1, 'Strategy in state initial cannot be resumed');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'retry'], 1, 'Strategy in state initial cannot be retried');
    // A change whose record cannot be printed (an unknown -c) is refused before it commits.
    for (const change of [['--gate-check', 'true'], ['--max-parallel-subclouds', '2'], ['--max-failures', '3']]) {
      expectRefused(t.dir, ['--db', t.db, 'strategy', 'update', ...change, '-c', 'in-sync', '-f', 'value'], 1, /No recognized column names in \['in-sync'\]/);
    }
    expect(dcm(['--db', t.db, 'strategy', 'apply']).code).toBe(0);
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '2'], 1, 'Strategy in state complete cannot be updated');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'retry'], 1, 'Strategy in state complete cannot be retried');
  });

  test('prestage keeps its own limit', () => {
    const t = fresh();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'prestage', '--sysadmin-password', 'x']);
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'update', '--max-parallel-subclouds', '251'], 2, 'Invalid max-parallel-subclouds value: 251. For prestage, the value must be between 1 and 250.');
  });
});

describe('subcloud-group update while a strategy exists', () => {
  test('warns that the strategy keeps its windows and points to strategy update', async () => {
    const t = fresh();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1']);
    let r = dcmQuickOk(['--db', t.db, 'subcloud-group', 'update', 'Default', '--max_parallel_subclouds', '4']);
    expect(r.stderr).toBe('');
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch']);
    r = dcmQuickOk(['--db', t.db, 'subcloud-group', 'update', 'Default', '--max_parallel_subclouds', '5']);
    expect(r.stderr).toMatch(/^warning: the strategy keeps the windows it was created with; .*dcm strategy update --max-parallel-subclouds/);
    expect(await stageWindows(t.db)).toEqual([[1, 4]]);
    // A change that is not the window says nothing.
    expect(dcmQuickOk(['--db', t.db, 'subcloud-group', 'update', 'Default', '--description', 'x']).stderr).toBe('');
  });
});

describe('strategy retry', () => {
  test('after failures and an abort: failed steps go back to the state they failed in, aborted to initial; apply runs only those, as the next attempt', async () => {
    const t = fresh();
    const clouds = names(40);
    createFleet(t.db, clouds, ['--max-parallel-subclouds', '3', '--sim-latency', '20ms..40ms', '--sim-fail', 's2=updating patches']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply', '-v']);
    await waitFor(() => /s2: updating patches -> failed/.test(apply.stderr()), 20_000, 5);
    expect(dcmQuick(['--db', t.db, 'strategy', 'abort']).code).toBe(0);
    expect((await apply.done).code).toBe(3);
    expect(strategyState(t.db)).toBe('aborted');
    const first = countBy(steps(t.db), (s) => s.state);
    expect(first.failed).toBe(1);
    expect(first.aborted).toBeGreaterThan(0);
    const before = history(t.db);

    expectRefused(t.dir, ['--db', t.db, 'strategy', 'retry', 's1'], 1, 'Step of s1 is complete: only failed or aborted steps are retried');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'retry', 'nope'], 1, 'Subcloud nope does not exist');
    expectRefused(t.dir, ['--db', t.db, 'strategy', 'retry', 's2', '--aborted'], 1, 'Step of s2 is failed: only aborted steps are retried');

    const r = dcmQuickOk(['--db', t.db, 'strategy', 'retry', '-f', 'json']);
    expect(json<{ state: string }>(r).state).toBe('initial');
    const after = steps(t.db);
    const byCloud = new Map(after.map((s) => [s.cloud, s]));
    expect(byCloud.get('s2')!.state).toBe('updating patches');
    expect(countBy(after, (s) => s.state)).toEqual({ complete: first.complete, initial: first.aborted, 'updating patches': 1 });
    // Nothing of the history is lost.
    expect(history(t.db)).toEqual(before);
    const retried = after.filter((s) => s.state === 'initial').map((s) => s.cloud);
    // Which steps were reset, and to where, on stderr, in step order; stdout is the record alone.
    const aborted = steps(t.db).filter((s) => retried.includes(s.cloud)).map((s) => `  ${s.cloud}: aborted -> initial`);
    expect(r.stderr.split('\n')).toEqual([
      `retry reset ${retried.length + 1} steps (dcm strategy apply runs them):`,
      ...[...aborted, '  s2: failed -> updating patches'].sort((a, b) => Number(/s(\d+)/.exec(a)![1]) - Number(/s(\d+)/.exec(b)![1])),
      '',
    ]);

    // s2 fails again (the injected failure stays), as the second attempt of that state; the
    // aborted ones run from the start; the complete ones are untouched.
    expect(dcm(['--db', t.db, 'strategy', 'apply']).code).toBe(1);
    const runs = history(t.db);
    const newRuns = runs.slice(before.length);
    expect(newRuns.filter((h) => h.cloud === 's2').map((h) => [h.state, h.attempt, h.outcome])).toEqual([['updating patches', 2, 'failed']]);
    expect([...new Set(newRuns.map((h) => h.cloud))].sort()).toEqual(['s2', ...retried].sort());
    expect(okRunProblems(runs, clouds.filter((c) => c !== 's2'), PATCH)).toEqual([]);
    expect(countBy(steps(t.db), (s) => s.state)).toEqual({ complete: 39, failed: 1 });
    expect(dcmQuickOk(['--db', t.db, 'strategy-step', 'history', 's2', '-f', 'value', '-c', 'attempt', '-c', 'outcome']).stdout).toBe('1 ok\n1 failed\n2 failed\n');

    // Only the named ones, only failed.
    const one = dcmQuickOk(['--db', t.db, 'strategy', 'retry', 's2', '--failed']);
    expect(byState(t.db, 's2')).toBe('updating patches');
    expect(one.stderr).toBe('retry reset 1 step (dcm strategy apply runs them):\n  s2: failed -> updating patches\n');
    expect(dcmQuick(['--db', t.db, 'strategy', 'delete', '--yes']).code).toBe(0);
  });
});

function byState(db: string, cloud: string): string | undefined {
  return steps(db).find((s) => s.cloud === cloud)?.state;
}
