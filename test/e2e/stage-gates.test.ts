/**
 * Stage gates end to end (README "Stage gates"), with the built dcm and real processes: a canary
 * stage whose budget is exceeded holds the rollout (stage 2 never starts, by the file and by the
 * commands' own log) until `strategy resume`; each stage's budget is its own; a soak waits from the
 * stored end of the stage, across a kill -9 of apply; a check that fails pauses, one that passes
 * goes on, and each sees its stage's subclouds; bad values are refused with nothing written.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, waitFor } from '../helpers/cli.js';
import { expectRefused, json, withSql } from '../helpers/fleet.js';
import { history, killLeftovers, micros, names, spawnDcm, steps, strategyState, tempPerTest } from '../helpers/history.js';
import { execFixture, peakConcurrent, type ExecFixture } from '../helpers/exec.js';
import { recordedEvents } from '../helpers/operator.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();
let f: ExecFixture | undefined;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
  f = undefined;
});

const status = (db: string) => json<Record<string, string | number | null>>(dcmQuickOk(['--db', db, 'strategy', 'status', '-f', 'json']));
const gateEvents = (db: string) => recordedEvents(db).filter((e) => e.event === 'stage gate').map((e) => e.details);
const stageRows = async (db: string) =>
  await withSql(db, (d) => d.prepare('SELECT stage, max_failures, gate, gate_check, gate_state, gate_due_at FROM strategy_stage ORDER BY stage').all()) as {
    stage: number;
    max_failures: string | null;
    gate: string;
    gate_check: string | null;
    gate_state: string | null;
    gate_due_at: string | null;
  }[];

/** Two groups, made in this order so that `canary` is stage 1 and `fleet` stage 2. */
function canaryAndFleet(db: string, canary: string[], fleet: string[], fleetWindow = 3): void {
  dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '1']);
  dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'fleet', '--max_parallel_subclouds', String(fleetWindow)]);
  dcmQuickOk(['--db', db, 'subcloud', 'add', ...canary, '--group', 'canary']);
  dcmQuickOk(['--db', db, 'subcloud', 'add', ...fleet, '--group', 'fleet']);
}

describe('a stage budget holds the rollout', () => {
  // Must show: a canary group whose two sites fail, --stage-max-failures 0 --stage-gate pause.
  test('both canary sites fail: stage 2 never starts, the strategy is paused with the reason; resume promotes and stage 2 runs', async () => {
    f = execFixture();
    const fx = f;
    const fleet = names(4, 'f');
    canaryAndFleet(fx.db, ['c1', 'c2'], fleet);
    // The canary's sites fail their first state; the fleet's succeed. Every run logs itself.
    const cfg = fx.config(`
defaults: {env: {STEP_MIN_MS: "20", STEP_MAX_MS: "60"}}
states:
  pre check:
    run: STEP_EXIT=$(case {cloud} in c*) echo 1;; *) echo 0;; esac) ${fx.step} {cloud}
  "*": [${fx.step}, "{cloud}", "{state}"]
`);
    dcmQuickOk(['--db', fx.db, 'strategy', 'create', '--type', 'patch', '--stage-max-failures', '0', '--stage-gate', 'pause', '--driver', 'exec', '--exec-config', cfg]);
    const apply = spawnDcm(['--db', fx.db, 'strategy', 'apply'], fx.env);
    await waitFor(() => strategyState(fx.db) === 'paused', 60_000, 20);
    await waitFor(() => apply.stderr().includes('dcm: paused: stage 1:'), 60_000, 20);

    // Held: nothing of stage 2 has left `initial`, and none of its commands ran.
    const held = steps(fx.db);
    expect(held.filter((s) => s.stage === 2).map((s) => s.state)).toEqual(['initial', 'initial', 'initial', 'initial']);
    expect(held.filter((s) => s.stage === 1).map((s) => [s.cloud, s.state])).toEqual([['c1', 'failed'], ['c2', 'initial']]);
    expect(fx.readRuns().map((r) => r.cloud)).toEqual(['c1']);
    const st = status(fx.db);
    expect(st.state).toBe('paused');
    expect(st['stage gates']).toMatch(/^stage 1: pause, max failures 0: held \(stage 1: 1 step\(s\) failed, more than its budget of 0 .*dcm strategy resume/);
    expect(apply.stderr()).toContain('c1 failed: stage 1 has 1 failed step(s), more than its budget of 0 (--stage-max-failures 0)');
    expect(gateEvents(fx.db)).toEqual([expect.stringMatching(/^stage 1: held: /)]);
    // The apply waits for the operator, it has not ended.
    expect(apply.child.exitCode).toBeNull();
    expect(fx.readRuns().map((r) => r.cloud)).toEqual(['c1']);

    const resumedAt = Date.now() * 1e6;
    dcmQuickOk(['--db', fx.db, 'strategy', 'resume']);
    const r = await apply.done;
    // Promoted: the rest of the canary runs (and fails), then the fleet; a failed canary still fails the strategy.
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('stage 1 promoted by `dcm strategy resume`');
    expect(strategyState(fx.db)).toBe('failed');
    const end = steps(fx.db);
    expect(end.filter((s) => s.stage === 2).map((s) => s.state)).toEqual(['complete', 'complete', 'complete', 'complete']);
    expect(end.find((s) => s.cloud === 'c2')!.state).toBe('failed');
    const runs = fx.readRuns();
    const fleetRuns = runs.filter((x) => x.cloud.startsWith('f'));
    expect(fleetRuns.length).toBe(4 * 5);
    // Every fleet command started after the resume, and after the canary's last run ended.
    const canaryEnd = Math.max(...runs.filter((x) => x.cloud.startsWith('c')).map((x) => x.end));
    for (const x of fleetRuns) {
      expect(x.start).toBeGreaterThan(resumedAt);
      expect(x.start).toBeGreaterThanOrEqual(canaryEnd);
    }
    expect(peakConcurrent(fleetRuns)).toBeLessThanOrEqual(3);
    expect(gateEvents(fx.db)).toEqual([expect.stringMatching(/^stage 1: held: /), 'stage 1: promoted: stage 1 promoted by `dcm strategy resume`']);
    expect(status(fx.db)['stage gates']).toMatch(/^stage 1: pause, max failures 0: promoted/);
  });

  test("each stage's budget is its own: stage 1's failures do not count against stage 2's; stage 2's own exceeded holds it, abort ends it", async () => {
    const t = temp();
    canaryAndFleet(t.db, ['c1', 'c2'], names(4, 'f'), 1);
    // Budget 1 a stage: stage 1 has one failure (not above it), stage 2 two (above it at the second).
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '10ms..30ms', '--stage-max-failures', '1',
      '--sim-fail', 'c1=pre check', '--sim-fail', 'f1=pre check', '--sim-fail', 'f2=pre check']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => strategyState(t.db) === 'paused', 60_000, 20);
    const s = steps(t.db);
    // Stage 1 ran to its end (1 failure, within its budget); stage 2 started, and stopped at its own second failure.
    expect(s.map((x) => [x.cloud, x.state])).toEqual([
      ['c1', 'failed'], ['c2', 'complete'], ['f1', 'failed'], ['f2', 'failed'], ['f3', 'initial'], ['f4', 'initial'],
    ]);
    expect(gateEvents(t.db)).toEqual([expect.stringMatching(/^stage 2: held: stage 2: 2 step\(s\) failed, more than its budget of 1 .*2 of its subcloud\(s\) not started/)]);
    expect(status(t.db)['stage gates']).toMatch(/^stage 1: none, max failures 1\nstage 2: none, max failures 1: held/);
    dcmQuickOk(['--db', t.db, 'strategy', 'abort']);
    const r = await apply.done;
    expect(r.code).toBe(3);
    expect(strategyState(t.db)).toBe('aborted');
    expect(steps(t.db).filter((x) => x.cloud === 'f3' || x.cloud === 'f4').map((x) => x.state)).toEqual(['aborted', 'aborted']);
    expect(history(t.db).some((h) => h.cloud === 'f3' || h.cloud === 'f4')).toBe(false);
  });
});

describe('the running stage follows strategy update', () => {
  test("its budget raised while it runs: the first failure no longer holds it, the next one over the new budget does", async () => {
    f = execFixture();
    const fx = f;
    canaryAndFleet(fx.db, names(4, 'c'), ['f1']);
    const go = path.join(fx.dir, 'go');
    // c1 waits for the test's go-ahead, then fails; c3 fails too; the rest succeed.
    const cfg = fx.config(`
states:
  pre check:
    run: if [ {cloud} = c1 ]; then while [ ! -e ${go} ]; do sleep 0.05; done; fi; STEP_EXIT=$(case {cloud} in c1|c3) echo 1;; *) echo 0;; esac) ${fx.step} {cloud}
  "*": [${fx.step}, "{cloud}", "{state}"]
`);
    dcmQuickOk(['--db', fx.db, 'strategy', 'create', '--type', 'patch', '--stage-max-failures', '0', '--driver', 'exec', '--exec-config', cfg]);
    const apply = spawnDcm(['--db', fx.db, 'strategy', 'apply'], fx.env);
    await waitFor(() => status(fx.db)['in flight'] === 1, 60_000, 20);
    dcmQuickOk(['--db', fx.db, 'strategy', 'update', '--stage', '1', '--stage-max-failures', '1']);
    await waitFor(() => apply.stderr().includes('stage 1 failure budget: more than 1 failed step(s) hold it (0 failed so far)'), 60_000, 20);
    fs.writeFileSync(go, '');
    await waitFor(() => strategyState(fx.db) === 'paused', 60_000, 20);
    expect(steps(fx.db).map((x) => [x.cloud, x.state])).toEqual([['c1', 'failed'], ['c2', 'complete'], ['c3', 'failed'], ['c4', 'initial'], ['f1', 'initial']]);
    expect(gateEvents(fx.db)).toEqual([expect.stringMatching(/^stage 1: held: stage 1: 2 step\(s\) failed, more than its budget of 1 /)]);
    expect(fx.readRuns().some((r) => r.cloud === 'c4' || r.cloud === 'f1')).toBe(false);
    dcmQuickOk(['--db', fx.db, 'strategy', 'abort']);
    expect((await apply.done).code).toBe(3);
  });
});

describe('a held stage across Ctrl-C, abort and retry', () => {
  test('Ctrl-C leaves it paused and held; the next apply waits for resume; retry reopens the stage, which its budget holds again', async () => {
    const t = temp();
    canaryAndFleet(t.db, ['c1', 'c2'], ['f1']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '10ms..30ms', '--stage-max-failures', '0', '--sim-fail', 'c1=pre check']);
    const first = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => strategyState(t.db) === 'paused', 60_000, 20);
    first.child.kill('SIGINT');
    expect((await first.done).code).toBe(130);
    expect(strategyState(t.db)).toBe('paused');
    expect((await stageRows(t.db))[0].gate_state).toBe('held');

    // A second apply finds it held and paused: it waits (no step moves) until the abort.
    const second = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => status(t.db).orchestrator !== null, 60_000, 20);
    dcmQuickOk(['--db', t.db, 'strategy', 'abort']);
    expect((await second.done).code).toBe(3);
    expect(steps(t.db).map((x) => [x.cloud, x.state])).toEqual([['c1', 'failed'], ['c2', 'aborted'], ['f1', 'aborted']]);
    expect(history(t.db).map((h) => h.cloud)).toEqual(['c1']);

    // Retry reopens stage 1: its gate is asked again, and its budget (c1 fails again) holds it again.
    dcmQuickOk(['--db', t.db, 'strategy', 'retry']);
    expect((await stageRows(t.db)).map((r) => r.gate_state)).toEqual([null, null]);
    const third = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => strategyState(t.db) === 'paused', 60_000, 20);
    expect(steps(t.db).find((x) => x.cloud === 'f1')!.state).toBe('initial');
    expect(gateEvents(t.db).filter((d) => d.startsWith('stage 1: held:')).length).toBe(2);
    dcmQuickOk(['--db', t.db, 'strategy', 'resume']);
    expect((await third.done).code).toBe(1);
    expect(steps(t.db).map((x) => [x.cloud, x.state])).toEqual([['c1', 'failed'], ['c2', 'complete'], ['f1', 'complete']]);
  });
});

describe('soak and check gates', () => {
  test('soak: stage 2 starts no sooner than the soak after stage 1 ended, counted from the stored time across a kill -9 of apply', async () => {
    const t = temp();
    canaryAndFleet(t.db, ['c1'], names(2, 'f'));
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '10ms..30ms', '--stage-gate', 'soak=3s']);
    const first = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(async () => (await stageRows(t.db))[0].gate_state === 'soaking', 60_000, 20);
    const due = (await stageRows(t.db))[0].gate_due_at!;
    expect(status(t.db)['stage gates']).toMatch(/^stage 1: soak=3s: soaking \(stage 1 ended: soaking 3s before stage 2\)/);
    first.child.kill('SIGKILL');
    await first.done;
    expect(steps(t.db).filter((x) => x.stage === 2).every((x) => x.state === 'initial')).toBe(true);

    const second = await spawnDcm(['--db', t.db, 'strategy', 'apply']).done;
    expect(second.code).toBe(0);
    const rows = await stageRows(t.db);
    // The restarted apply went on with the soak the first one wrote, not a new one.
    expect(rows[0]).toMatchObject({ gate_state: 'passed', gate_due_at: null });
    const runs = history(t.db);
    const stage1End = Math.max(...runs.filter((h) => h.cloud === 'c1').map((h) => micros(h.finished_at!)));
    const stage2Start = Math.min(...runs.filter((h) => h.cloud.startsWith('f')).map((h) => micros(h.started_at)));
    expect(stage2Start).toBeGreaterThanOrEqual(stage1End + 3_000_000);
    expect(stage2Start).toBeGreaterThanOrEqual(micros(due));
    expect(gateEvents(t.db)).toEqual(['stage 1: soaking: stage 1 ended: soaking 3s before stage 2', 'stage 1: passed: stage 1 soaked 3s; stage 2 starts']);
  });

  test('check: a failing check pauses with its exit code and last line; resume promotes; a passing one goes on; each sees its stage', async () => {
    const t = temp();
    for (const [g, w] of [['a', 1], ['b', 2], ['c', 2]] as const) dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', g, '--max_parallel_subclouds', String(w)]);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'a1', '--group', 'a']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'b1', 'b2', '--group', 'b']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'c1', 'c2', '--group', 'c']);
    const log = path.join(t.dir, 'checks.log');
    // Stage 1's check fails, stage 2's passes.
    const check = `echo "$DCM_STAGE|$DCM_STAGE_CLOUDS" >> ${log}; echo looking; if [ "$DCM_STAGE" = 1 ]; then echo "alarms: 2 critical"; exit 4; fi`;
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '10ms..30ms', '--stage-gate', 'check', '--gate-check', check]);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => strategyState(t.db) === 'paused', 60_000, 20);
    expect(steps(t.db).filter((x) => x.stage > 1).every((x) => x.state === 'initial')).toBe(true);
    expect(fs.readFileSync(log, 'utf8')).toBe('1|a1\n');
    const reason = 'stage 1 gate check exited 4: alarms: 2 critical; `dcm strategy resume` starts stage 2';
    expect(status(t.db)['stage gates']).toBe(`stage 1: check: paused (${reason})\nstage 2: check\nstage 3: check (last stage: no gate after it)`);
    await waitFor(() => apply.stderr().includes(`dcm: paused: ${reason}`), 60_000, 20);

    dcmQuickOk(['--db', t.db, 'strategy', 'resume']);
    const r = await apply.done;
    expect(r.code).toBe(0);
    expect(strategyState(t.db)).toBe('complete');
    // Stage 2's check ran (and passed) before stage 3; the last stage has no gate after it.
    expect(fs.readFileSync(log, 'utf8')).toBe('1|a1\n2|b1 b2\n');
    const runs = history(t.db);
    const stage2End = Math.max(...runs.filter((h) => h.cloud.startsWith('b')).map((h) => micros(h.finished_at!)));
    const stage3Start = Math.min(...runs.filter((h) => h.cloud.startsWith('c')).map((h) => micros(h.started_at)));
    expect(stage3Start).toBeGreaterThan(stage2End);
    expect(gateEvents(t.db).map((d) => d.split(':').slice(0, 2).join(':'))).toEqual([
      'stage 1: checking', 'stage 1: paused', 'stage 1: promoted', 'stage 2: checking', 'stage 2: passed',
    ]);
    // The report says each stage's gate and how it went (its event marks are the record's, above).
    const html = dcmQuickOk(['--db', t.db, 'strategy', 'report', '--html', '-']).stdout;
    expect(html).toMatch(/<dd data-key="stage gates">stage 1: check: promoted \(stage 1 promoted by .*<br>stage 2: check: passed \(stage 2 gate check passed; stage 3 starts\)<br>stage 3: check \(last stage: no gate after it\)<\/dd>/);
  });

  test('a soak changed while it runs: update --stage 1 --stage-gate none ends it, the apply goes on at once', async () => {
    const t = temp();
    canaryAndFleet(t.db, ['c1'], ['f1']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '10ms..30ms', '--stage-gate', 'soak=8760h']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(async () => (await stageRows(t.db))[0].gate_state === 'soaking', 60_000, 20);
    // Its steps have ended, its gate has not: it can be changed.
    dcmQuickOk(['--db', t.db, 'strategy', 'update', '--stage', '1', '--stage-gate', 'none']);
    const r = await apply.done;
    expect(r.code).toBe(0);
    expect(steps(t.db).map((x) => x.state)).toEqual(['complete', 'complete']);
    expect(dcmQuick(['--db', t.db, 'strategy', 'update', '--stage', '1', '--stage-gate', 'pause']).code).toBe(1);
  });

  test('Ctrl-C while a check runs stops it (its process group), leaves the gate checking; the next apply runs it again', async () => {
    const t = temp();
    canaryAndFleet(t.db, ['c1'], ['f1']);
    const log = path.join(t.dir, 'checks.log');
    const go = path.join(t.dir, 'go');
    // The first run waits (for a file that never comes); the second finds it and passes.
    const check = `echo "start $$" >> ${log}; while [ ! -e ${go} ]; do sleep 0.05; done; echo passed >> ${log}`;
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '10ms..30ms', '--stage-gate', 'check', '--gate-check', check]);
    const first = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('start'), 60_000, 20);
    const pid = Number(/start (\d+)/.exec(fs.readFileSync(log, 'utf8'))![1]);
    first.child.kill('SIGINT');
    expect((await first.done).code).toBe(130);
    // The check's shell is gone (or a zombie: nothing reaps it here).
    await waitFor(() => {
      try {
        return fs.readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].startsWith('Z');
      } catch {
        return true;
      }
    }, 60_000, 20);
    expect((await stageRows(t.db))[0].gate_state).toBe('checking');
    expect(strategyState(t.db)).toBe('applying');
    expect(steps(t.db).find((x) => x.cloud === 'f1')!.state).toBe('initial');

    fs.writeFileSync(go, '');
    const second = await spawnDcm(['--db', t.db, 'strategy', 'apply']).done;
    expect(second.code).toBe(0);
    expect(fs.readFileSync(log, 'utf8')).toMatch(/^start \d+\nstart \d+\npassed\n$/);
    expect((await stageRows(t.db))[0].gate_state).toBe('passed');
  });

  test("check from the exec config's gate_check", async () => {
    f = execFixture();
    const fx = f;
    canaryAndFleet(fx.db, ['c1'], ['f1']);
    const marker = path.join(fx.dir, 'checked');
    const cfg = fx.config(`gate_check: echo "$DCM_STAGE_CLOUDS" > ${marker}\nstates:\n  "*": [${fx.step}, "{cloud}", "{state}"]\n`);
    dcmQuickOk(['--db', fx.db, 'strategy', 'create', '--type', 'patch', '--stage-gate', 'check', '--driver', 'exec', '--exec-config', cfg]);
    expect((await stageRows(fx.db)).map((r) => r.gate_check)).toEqual([`echo "$DCM_STAGE_CLOUDS" > ${marker}`, `echo "$DCM_STAGE_CLOUDS" > ${marker}`]);
    const r = dcm(['--db', fx.db, 'strategy', 'apply'], { env: fx.env });
    expect(r.code).toBe(0);
    expect(fs.readFileSync(marker, 'utf8')).toBe('c1\n');
    expect((await stageRows(fx.db))[0].gate_state).toBe('passed');
  });
});

describe('where the gates come from, and bad values', () => {
  test("the group's defaults; create overrides them for every stage; update --stage K, or every stage not ended", async () => {
    const t = temp();
    canaryAndFleet(t.db, ['c1'], ['f1']);
    const note = dcmQuickOk(['--db', t.db, 'subcloud-group', 'update', 'canary', '--stage-gate', 'soak=10m', '--stage-max-failures', '0']);
    expect(note.stderr).toContain('stage gate defaults of group canary: stage max failures 0, stage gate soak=10m');
    // The group's record stays dcmanager's.
    expect(Object.keys(json<Record<string, unknown>>(dcmQuickOk(['--db', t.db, 'subcloud-group', 'show', 'canary', '-f', 'json'])))).not.toContain('stage gate');
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch']);
    expect((await stageRows(t.db)).map((r) => [r.max_failures, r.gate])).toEqual([['0', 'soak=10m'], [null, 'none']]);
    dcmQuickOk(['--db', t.db, 'strategy', 'update', '--stage', '2', '--stage-gate', 'pause']);
    dcmQuickOk(['--db', t.db, 'strategy', 'update', '--stage-max-failures', '25%']);
    expect((await stageRows(t.db)).map((r) => [r.max_failures, r.gate])).toEqual([['25%', 'soak=10m'], ['25%', 'pause']]);
    expect(recordedEvents(t.db).map((e) => e.details)).toEqual(['stage 2 gate: none -> pause', 'stage 1 max failures: 0 -> 25%; stage 2 max failures: None -> 25%']);
    // Every format of the status record carries it, one line a stage.
    const lines = 'stage 1: soak=10m, max failures 25%\nstage 2: pause (last stage: no gate after it), max failures 25%';
    expect(dcmQuickOk(['--db', t.db, 'strategy', 'status', '-f', 'value', '-c', 'stage gates']).stdout).toBe(`${lines}\n`);
    // YAML as cliff's PyYAML writes a multi-line string: quoted, a blank line for each line break.
    expect(dcmQuickOk(['--db', t.db, 'strategy', 'status', '-f', 'yaml', '-c', 'stage gates']).stdout).toBe(`stage gates: '${lines.replace('\n', '\n\n  ')}'\n`);
    expect(dcmQuickOk(['--db', t.db, 'strategy', 'status']).stdout).toMatch(/\| stage gates +\| stage 1: soak=10m, max failures 25% +\|/);
    dcmQuickOk(['--db', t.db, 'strategy', 'delete', '--yes']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--stage-gate', 'none', '--stage-max-failures', '2']);
    expect((await stageRows(t.db)).map((r) => [r.max_failures, r.gate])).toEqual([['2', 'none'], ['2', 'none']]);
  });

  test('bad values are refused at create and update with a usage error (exit 2), nothing written', () => {
    const t = temp();
    canaryAndFleet(t.db, ['c1'], ['f1']);
    const create = ['--db', t.db, 'strategy', 'create', '--type', 'patch'];
    expectRefused(t.dir, [...create, '--stage-gate', 'soak=x'], 2, /^invalid --stage-gate 'soak=x': soak needs a duration/);
    expectRefused(t.dir, [...create, '--stage-gate', 'later'], 2, /^invalid --stage-gate 'later': choose none, pause, soak=DURATION/);
    expectRefused(t.dir, [...create, '--stage-max-failures=-1'], 2, /^invalid --stage-max-failures '-1'/);
    expectRefused(t.dir, [...create, '--stage-max-failures', '150%'], 2, /^invalid --stage-max-failures '150%'/);
    const noCheck = '--stage-gate check needs a command: --gate-check CMD, or gate_check in the exec config';
    expectRefused(t.dir, [...create, '--stage-gate', 'check'], 2, noCheck);
    expectRefused(t.dir, [...create, '--stage-gate', 'check', '--gate-check', ' '], 2, "option '--gate-check' is empty: give a command");
    // A group's default `check`, with no command anywhere: refused too, rolled back.
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'update', 'fleet', '--stage-gate', 'check']);
    expectRefused(t.dir, create, 2, noCheck);
    expect(dcmQuick(['--db', t.db, 'strategy', 'show']).code).toBe(1);
    expectRefused(t.dir, ['--db', t.db, 'subcloud-group', 'update', 'fleet', '--stage-gate', 'soak=1'], 2, /^invalid --stage-gate 'soak=1'/);

    dcmQuickOk([...create, '--gate-check', 'true']);
    const update = ['--db', t.db, 'strategy', 'update'];
    expectRefused(t.dir, [...update, '--stage-gate', 'soak=x'], 2, /^invalid --stage-gate 'soak=x'/);
    expectRefused(t.dir, [...update, '--stage', '3', '--stage-gate', 'pause'], 1, 'Strategy has no stage 3 (it has stages 1 to 2)');
  });
});
