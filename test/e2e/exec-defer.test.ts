/**
 * Sites that answer (issue 18), end to end with real processes judged by their own log: a state
 * command that exits 75 (EX_TEMPFAIL, or a code of `defer_exit_codes`) defers its step, which
 * gives its slot to the next site, is tried again after --defer-delay and fails `unreachable` at
 * the deadline; `subcloud probe` and `strategy create --probe` on the exec and sim drivers.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, dcmSpawn, waitFor } from '../helpers/cli.js';
import { history, names, steps, strategyState } from '../helpers/history.js';
import { execFixture, overlapsPerCloud, peakConcurrent, type ExecFixture } from '../helpers/exec.js';
import { expectRefused, withSql } from '../helpers/fleet.js';
import { parseTime } from '../../src/store/clock.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => f?.cleanup());
const db = () => ['--db', f.db];

/**
 * The first state's command: logs its run (step.sh) and exits 75 for the clouds in $DEFER_ALWAYS,
 * and for those in $DEFER_ONCE on their first attempt only; $DEFER_CODE overrides 75. The clouds
 * in $SLOW take $SLOW_MS over it.
 */
function siteScript(): string {
  const file = path.join(f.dir, 'site.sh');
  fs.writeFileSync(
    file,
    `#!/bin/sh
code=0
case " $DEFER_ALWAYS " in *" $DCM_CLOUD "*) code=\${DEFER_CODE:-75};; esac
case " $DEFER_ONCE " in *" $DCM_CLOUD "*) [ "$DCM_ATTEMPT" = 1 ] && code=\${DEFER_CODE:-75};; esac
[ "$code" != 0 ] && echo "site $DCM_CLOUD does not answer" >&2
case " $SLOW " in *" $DCM_CLOUD "*) STEP_MIN_MS=$SLOW_MS; STEP_MAX_MS=$SLOW_MS;; esac
STEP_EXIT=$code exec ${f.step} "$@"
`,
    { mode: 0o755 },
  );
  return file;
}

function config(env: Record<string, string>, extra = ''): string {
  const site = siteScript();
  const envText = Object.entries({ STEP_MIN_MS: '60', STEP_MAX_MS: '120', ...env })
    .map(([k, v]) => `${k}: "${v}"`)
    .join(', ');
  return f.config(`
defaults:
  timeout: 30s
  env: {${envText}}
${extra}
states:
  pre check: [${site}]
  "*": [${f.step}]
`);
}

const stepOf = (cloud: string) => steps(f.db).find((s) => s.cloud === cloud)!;

describe('deferred steps (exit 75)', () => {
  // Claim, README "Sites that answer": a deferred step gives up its slot at once (the window is
  // never exceeded), is tried again after --defer-delay, and fails `unreachable` at --defer-until.
  test('sites that never answer are deferred, retried, and failed at the deadline while others use their slots', () => {
    f = execFixture();
    const N = 8;
    const WINDOW = 2;
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(N)]);
    const cfg = config({ DEFER_ALWAYS: 's1 s2' });
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', String(WINDOW),
      '--driver', 'exec', '--exec-config', cfg, '--defer-delay', '150ms', '--defer-until', '4s']);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('strategy failed');
    // Each deferral is a transition of its own in apply's output.
    expect(r.stderr).toMatch(/ s1: deferred \(pre check: exit 75: site s1 does not answer; deferred \(1\), tried again in 150ms\)\n/);

    const runs = f.readRuns();
    // The window holds whatever was retried, by the commands' own log.
    expect(peakConcurrent(runs)).toBeLessThanOrEqual(WINDOW);
    expect(overlapsPerCloud(runs)).toEqual([]);
    for (const cloud of ['s1', 's2']) {
      const tries = runs.filter((x) => x.cloud === cloud);
      // Only ever the first state, as new attempts.
      expect(tries.every((x) => x.state === 'pre check')).toBe(true);
      expect(tries.length).toBeGreaterThan(1);
      expect(tries.map((x) => x.attempt)).toEqual(tries.map((_, i) => i + 1));
      expect(stepOf(cloud)).toMatchObject({ state: 'failed', details: expect.stringMatching(/^pre check: unreachable: exit 75: site s\d does not answer/) });
      const h = history(f.db, cloud);
      expect(h.slice(0, -1).every((x) => x.outcome === 'failed' && x.details!.startsWith('deferred: exit 75'))).toBe(true);
      expect(h[h.length - 1].details).toMatch(/^unreachable: .*--defer-until deadline/);
    }
    // Their slots went to the next sites: s3 and s4 took the two slots s1 and s2 gave back (the
    // second of them to start, once both had), and other sites ran between s1's tries.
    const first = (c: string) => runs.find((x) => x.cloud === c)!;
    expect(Math.min(first('s3').start, first('s4').start)).toBeGreaterThanOrEqual(Math.min(first('s1').end, first('s2').end));
    expect(Math.max(first('s3').start, first('s4').start)).toBeGreaterThanOrEqual(Math.max(first('s1').end, first('s2').end));
    const s1 = runs.filter((x) => x.cloud === 's1');
    expect(runs.some((x) => x.cloud !== 's1' && x.cloud !== 's2' && x.start > s1[0].end && x.start < s1[1].start)).toBe(true);
    for (const c of names(N).slice(2)) expect(stepOf(c).state).toBe('complete');
    expect(f.leftovers()).toEqual([]);
  });

  // Claim, README "Sites that answer": a site that answers on a later try ends complete; a code of
  // `defer_exit_codes` defers as 75 does; with no --defer-until a deferred step is tried while
  // its stage has other work.
  test('a site that does not answer once, then does, ends complete; defer_exit_codes', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(4)]);
    const cfg = config({ DEFER_ONCE: 's1', DEFER_CODE: '69' }, 'defer_exit_codes: [69, 75]');
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '2',
      '--driver', 'exec', '--exec-config', cfg, '--defer-delay', '100ms']);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.stderr).toContain('strategy complete');
    expect(r.code).toBe(0);
    const s1 = history(f.db, 's1');
    expect(s1[0]).toMatchObject({ state: 'pre check', attempt: 1, outcome: 'failed', details: 'deferred: exit 69: site s1 does not answer' });
    expect(s1[1]).toMatchObject({ state: 'pre check', attempt: 2, outcome: 'ok' });
    expect(stepOf('s1').state).toBe('complete');
    expect(peakConcurrent(f.readRuns())).toBeLessThanOrEqual(2);
  });

  // Claim, README "Sites that answer": with `defer_on_timeout: true`, a site that does not answer
  // in time (its state runs past its timeout) is deferred as exit 75 is, and fails `unreachable`
  // at the deadline; its hanging runs are killed (no process left) and its slot goes on meanwhile.
  test('defer_on_timeout: a site that times out is deferred, retried, and failed at the deadline', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(4)]);
    const hangs = path.join(f.dir, 'hangs.log');
    const site = path.join(f.dir, 'hang.sh');
    fs.writeFileSync(site, `#!/bin/sh
case " $HANG " in *" $DCM_CLOUD "*) echo "$DCM_CLOUD $DCM_ATTEMPT" >> ${hangs}; exec sleep 60;; esac
exec ${f.step} "$@"
`, { mode: 0o755 });
    const cfg = f.config(`
defaults:
  timeout: 30s
  env: {STEP_MIN_MS: "60", STEP_MAX_MS: "120", HANG: "s1"}
defer_on_timeout: true
states:
  pre check: {run: [${site}], timeout: 700ms, kill_grace: 200ms}
  "*": [${f.step}]
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '2',
      // A deadline well past the first try's 700 ms and its kill: a busy CI (the other versions'
      // installs beside the suite) once took 3 s from the first start to that try's end.
      '--driver', 'exec', '--exec-config', cfg, '--defer-delay', '100ms', '--defer-until', '6s']);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/ s1: deferred \(pre check: timed out after 700ms; deferred \(1\), tried again in 100ms\)\n/);
    expect(stepOf('s1')).toMatchObject({ state: 'failed', details: expect.stringMatching(/^pre check: unreachable: timed out after 700ms \(\d+ tries; the --defer-until deadline is reached\)/) });
    const tries = fs.readFileSync(hangs, 'utf8').trim().split('\n');
    expect(tries.length).toBeGreaterThan(1);
    expect(tries).toEqual(tries.map((_, i) => `s1 ${i + 1}`));
    for (const c of ['s2', 's3', 's4']) expect(stepOf(c).state).toBe('complete');
    expect(peakConcurrent(f.readRuns())).toBeLessThanOrEqual(2);
    expect(f.leftovers()).toEqual([]);
  });

  // Claim, README "Sites that answer": without --defer-until, a deferred step fails once the rest of its stage is done.
  test('no deadline: the site that never answers fails once its stage has nothing else to do', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(3)]);
    const cfg = config({ DEFER_ALWAYS: 's1' });
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1',
      '--driver', 'exec', '--exec-config', cfg, '--defer-delay', '100ms']);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(1);
    expect(stepOf('s1')).toMatchObject({ state: 'failed', details: expect.stringContaining('the rest of its stage is done') });
    const runs = f.readRuns();
    const lastS1 = runs.filter((x) => x.cloud === 's1').pop()!;
    // Its last try came after every other site had ended.
    for (const c of ['s2', 's3']) expect(lastS1.start).toBeGreaterThanOrEqual(Math.max(...runs.filter((x) => x.cloud === c).map((x) => x.end)));
    expect(peakConcurrent(runs)).toBe(1);
  });

  // Claim, README "Sites that answer": after a kill -9 of apply, a deferred step is tried again
  // once its stored time has come, never forgotten and never run twice at once.
  test('kill -9 while a step is deferred: the next apply tries it when due, from the stored time', async () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(3)]);
    const cfg = config({ DEFER_ONCE: 's1', STEP_MIN_MS: '300', STEP_MAX_MS: '300' });
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1',
      '--driver', 'exec', '--exec-config', cfg, '--defer-delay', '3s']);
    const first = dcmSpawn([...db(), 'strategy', 'apply'], f.env, { detached: true });
    await waitFor(async () => await withSql(f.db, async (d) => await d.prepare(`SELECT state FROM strategy_step st JOIN subcloud s ON s.id = st.subcloud_id WHERE s.name = 's1'`).pluck().get() === 'deferred'));
    process.kill(first.child.pid!, 'SIGKILL');
    await first.done;
    // Counted apart from failed while it waits.
    const status = JSON.parse(dcmQuickOk([...db(), 'strategy', 'status', '-f', 'json']).stdout) as Record<string, unknown>;
    expect(status).toMatchObject({ deferred: 1, failed: 0 });
    const due = await withSql(f.db, async (d) => await d.prepare(`SELECT retry_at FROM step_history ORDER BY id LIMIT 1`).pluck().get() as string);
    expect(due).not.toBeNull();
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.stderr).toContain('strategy complete');
    const s1 = f.readRuns().filter((x) => x.cloud === 's1' && x.state === 'pre check');
    expect(s1.map((x) => x.attempt)).toEqual([1, 2]);
    // Tried again no earlier than its stored time.
    expect(s1[1].start / 1e6).toBeGreaterThanOrEqual(parseTime(due));
    expect(overlapsPerCloud(f.readRuns())).toEqual([]);
    expect(strategyState(f.db)).toBe('complete');
  });
});

describe('a deferred step and a run left going', () => {
  // The window counts a run an earlier apply left going: a deferred step due when the next apply
  // starts waits for that run's slot rather than taking it (with several workers the claim of the
  // deferred step was refused for ever, as the adopted run filled the stage's window, and nothing
  // ran again).
  test('kill -9 while one step is deferred and the next runs; the next apply starts once the deferred one is due', async () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(3)]);
    const cfg = config({ DEFER_ONCE: 's1', STEP_MIN_MS: '50', STEP_MAX_MS: '50', SLOW: 's2', SLOW_MS: '8000' });
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1',
      '--driver', 'exec', '--exec-config', cfg, '--defer-delay', '1s']);
    const first = dcmSpawn([...db(), 'strategy', 'apply'], f.env, { detached: true });
    // Launched, not only committed: its pid is recorded once its launcher started it (a kill between
    // the two leaves an operation that never ran, which the next apply runs, not adopts).
    const launched = async () => await withSql(f.db, async (d) => await d.prepare(`SELECT count(*) FROM step_history h JOIN strategy_step st ON st.id = h.step_id
      JOIN subcloud sc ON sc.id = st.subcloud_id WHERE sc.name = 's2' AND h.outcome = 'running' AND h.pid IS NOT NULL`).pluck().get() as number);
    await waitFor(async () => await launched() > 0);
    process.kill(first.child.pid!, 'SIGKILL');
    await first.done;
    const due = parseTime(await withSql(f.db, async (d) => await d.prepare(`SELECT retry_at FROM step_history WHERE retry_at IS NOT NULL`).pluck().get() as string));
    // s1 is due before the next apply starts, while s2's run still goes on its site.
    await waitFor(() => Date.now() > due);
    expect(f.readRuns().filter((x) => x.cloud === 's2')).toEqual([]);
    const second = dcmSpawn([...db(), 'strategy', 'apply'], f.env, { detached: true });
    const r = await second.done;
    expect(r.stderr).toContain('resuming: 1 run(s) left by the last apply');
    expect(r.code).toBe(0);
    const runs = f.readRuns();
    // s2's run was adopted, not run again; s1 ran its second try after it, never beside it.
    expect(runs.filter((x) => x.state === 'pre check').map((x) => [x.cloud, x.attempt])).toEqual([
      ['s1', 1],
      ['s2', 1],
      ['s1', 2],
      ['s3', 1],
    ]);
    expect(peakConcurrent(runs)).toBe(1);
    expect(strategyState(f.db)).toBe('complete');
  }, 120_000);
});

/** `n` subclouds one at a time, s1's site never answering (deferred for an hour); the apply, once s1 is deferred. */
async function applyUntilS1Deferred(n: number): Promise<ReturnType<typeof dcmSpawn>> {
  f = execFixture();
  dcmQuickOk([...db(), 'subcloud', 'add', ...names(n)]);
  const cfg = config({ DEFER_ALWAYS: 's1', STEP_MIN_MS: '100', STEP_MAX_MS: '100' });
  dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1',
    '--driver', 'exec', '--exec-config', cfg, '--defer-delay', '1h']);
  const apply = dcmSpawn([...db(), 'strategy', 'apply'], f.env, { detached: true });
  await waitFor(() => stepOf('s1').state === 'deferred');
  return apply;
}

describe('deferred steps and control', () => {
  // Claim, README "Sites that answer": an abort ends deferred steps `aborted`; none is tried again.
  test('abort while a step is deferred: it ends aborted, not tried again, and the apply ends', async () => {
    const apply = await applyUntilS1Deferred(4);
    dcmQuickOk([...db(), 'strategy', 'abort']);
    const r = await apply.done;
    expect(r.code).toBe(3);
    expect(stepOf('s1')).toMatchObject({ state: 'aborted', details: 'aborted while deferred (the site had not answered)' });
    expect(f.readRuns().filter((x) => x.cloud === 's1')).toHaveLength(1);
    expect(strategyState(f.db)).toBe('aborted');
  });
});

describe('deferred steps and an abort with no orchestrator', () => {
  // Claim, README "Sites that answer": an abort made while no apply runs ends a deferred step as a
  // live apply's abort does, not as a step caught mid-state.
  test('apply killed while a step is deferred, then abort: it ends aborted while deferred', async () => {
    const apply = await applyUntilS1Deferred(3);
    process.kill(apply.child.pid!, 'SIGKILL');
    await apply.done;
    dcmQuickOk([...db(), 'strategy', 'abort']);
    expect(stepOf('s1')).toMatchObject({ state: 'aborted', details: 'aborted while deferred (the site had not answered)' });
    expect(f.readRuns().filter((x) => x.cloud === 's1')).toHaveLength(1);
  });
});

describe('deferred steps and pause', () => {
  // Claim, README "Sites that answer": a deferred step whose time has come is not tried while paused; resume lets it go on.
  test('pause holds a deferred step past its time; it is tried once resumed', async () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(3)]);
    const cfg = config({ DEFER_ONCE: 's1', STEP_MIN_MS: '50', STEP_MAX_MS: '50' });
    // The others take about half a second; s1's next try is due long after, so the strategy cannot
    // end before the pause below lands, however slow a loaded machine makes that command (with
    // 500 ms, all three ended first once, on a busy CI machine).
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1',
      '--driver', 'exec', '--exec-config', cfg, '--defer-delay', '4s']);
    const apply = dcmSpawn([...db(), 'strategy', 'apply'], f.env, { detached: true });
    const row = async () => await withSql(f.db, async (d) => await d.prepare(`SELECT st.state, (SELECT retry_at FROM step_history h WHERE h.step_id = st.id ORDER BY h.id LIMIT 1) AS due
      FROM strategy_step st JOIN subcloud s ON s.id = st.subcloud_id WHERE s.name = 's1'`).get() as { state: string; due: string | null });
    await waitFor(async () => (await row()).state === 'deferred');
    dcmQuickOk([...db(), 'strategy', 'pause']);
    const due = parseTime((await row()).due!);
    // Its time has passed while paused, and the subcloud in flight has ended.
    await waitFor(() => Date.now() > due + 300 && (JSON.parse(dcmQuickOk([...db(), 'strategy', 'status', '-f', 'json']).stdout) as Record<string, number>)['in flight'] === 0);
    expect((await row()).state).toBe('deferred');
    const resumedAt = Date.now();
    dcmQuickOk([...db(), 'strategy', 'resume']);
    const r = await apply.done;
    expect(r.code).toBe(0);
    const s1 = f.readRuns().filter((x) => x.cloud === 's1');
    expect(s1.map((x) => x.attempt).slice(0, 2)).toEqual([1, 2]);
    expect(s1[1].start / 1e6).toBeGreaterThanOrEqual(resumedAt);
    expect(peakConcurrent(f.readRuns())).toBe(1);
  });
});

describe('probes', () => {
  const probeConfig = () =>
    f.config(`
probe: 'if [ {label.down} = yes ]; then echo no route to {cloud} >&2; exit 1; fi; echo {cloud} answers'
states:
  "*": [${f.step}]
`);

  // Claim, README "Sites that answer": `subcloud probe` runs the exec config's probe and records availability.
  test('subcloud probe (exec): online when the probe exits 0, offline when not; exit 1 when one did not answer', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(4)]);
    dcmQuickOk([...db(), 'subcloud', 'update', 's3', '--label', 'down=yes']);
    const cfg = probeConfig();
    const r = dcmQuick([...db(), 'subcloud', 'probe', '--all', '--driver', 'exec', '--exec-config', cfg, '--max-parallel', '2', '-f', 'json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual([
      { name: 's1', availability: 'online', detail: 's1 answers' },
      { name: 's2', availability: 'online', detail: 's2 answers' },
      { name: 's3', availability: 'offline', detail: 'exit 1: no route to s3' },
      { name: 's4', availability: 'online', detail: 's4 answers' },
    ]);
    expect(r.stderr).toBe('warning: 1 of 4 subcloud(s) did not answer: s3\n');
    const avail = () => (JSON.parse(dcmQuickOk([...db(), 'subcloud', 'list', '-f', 'json']).stdout) as { name: string; availability: string }[]).map((x) => `${x.name}=${x.availability}`);
    expect(avail()).toEqual(['s1=online', 's2=online', 's3=offline', 's4=online']);
    // The site is back: probing it again brings it online; exit 0.
    dcmQuickOk([...db(), 'subcloud', 'update', 's3', '--label', 'down=']);
    expect(dcmQuick([...db(), 'subcloud', 'probe', 's3', '--driver', 'exec', '--exec-config', cfg]).code).toBe(0);
    expect(avail()).toContain('s3=online');
    // No probe in the config: a usage error.
    const none = f.config(`states:\n  "*": [${f.step}]\n`, 'none.yaml');
    expectRefused(f.dir, [...db(), 'subcloud', 'probe', '--all', '--driver', 'exec', '--exec-config', none], 2, /probe: missing/);
    expectRefused(f.dir, [...db(), 'subcloud', 'probe'], 2, 'name the subclouds to probe, or give --group G or --all');
  });

  // Claim, README "Sites that answer": the sim's sites answer unless labelled sim_unreachable.
  test('subcloud probe (sim) and a sim site that does not answer is deferred', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(3), '--sync', 'all=out-of-sync']);
    dcmQuickOk([...db(), 'subcloud', 'update', 's2', '--label', 'sim_unreachable=yes']);
    const r = dcmQuick([...db(), 'subcloud', 'probe', '--all', '-f', 'value', '-c', 'name', '-c', 'availability']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('s1 online\ns2 offline\ns3 online\n');
    // Brought back online by hand, its first state is deferred until the rest of its stage is done.
    dcmQuickOk([...db(), 'subcloud', 'update', 's2', '--availability', 'online']);
    dcmQuickOk([...db(), 'patch-strategy', 'create', '--sim-latency', '20ms', '--defer-delay', '50ms']);
    expect(dcm([...db(), 'patch-strategy', 'apply']).code).toBe(1);
    expect(stepOf('s2')).toMatchObject({ state: 'failed', details: expect.stringContaining('unreachable: no answer (label sim_unreachable)') });
    expect(stepOf('s1').state).toBe('complete');
  });

  // Claim, README "Sites that answer": `strategy create --probe` refuses, naming the sites; with
  // --skip-unreachable it leaves them out and lists them on stderr.
  test('strategy create --probe refuses when a site does not answer; --skip-unreachable leaves it out', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...names(4)]);
    dcmQuickOk([...db(), 'subcloud', 'update', 's2', 's4', '--label', 'down=yes']);
    const cfg = probeConfig();
    const create = [...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg, '--probe'];
    expectRefused(f.dir, create, 1, '2 subcloud(s) did not answer the probe: s2 (exit 1: no route to s2), s4 (exit 1: no route to s4); nothing created (--skip-unreachable leaves them out)');
    expectRefused(f.dir, [...db(), 'strategy', 'create', '--type', 'patch', '--skip-unreachable'], 2, '--skip-unreachable needs --probe: only a probe tells which subclouds do not answer');
    const r = dcmQuickOk([...create, '--skip-unreachable']);
    expect(r.stderr).toBe(
      'warning: left out 2 subcloud(s) that did not answer the probe (recorded offline): s2 (exit 1: no route to s2), s4 (exit 1: no route to s4)\n' +
        // Then who the plan left out, by reason (issue 34): they are offline now.
        "warning: left out 2 of 4 subclouds:\n  offline (2): s2, s4 (recorded so by a probe, an audit or the inventory: 'dcm subcloud probe' rechecks)\n",
    );
    expect(steps(f.db).map((s) => s.cloud)).toEqual(['s1', 's3']);
    const avail = JSON.parse(dcmQuickOk([...db(), 'subcloud', 'show', 's2', '-f', 'json']).stdout) as { availability: string };
    expect(avail.availability).toBe('offline');
  });

  test('bad --defer-delay and --defer-until values are usage errors that change nothing', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    expectRefused(f.dir, [...db(), 'patch-strategy', 'create', '--defer-delay', '10'], 2, 'Invalid --defer-delay value: 10. Give a unit: 10s, 10m');
    expectRefused(f.dir, [...db(), 'patch-strategy', 'create', '--defer-until', 'tomorrow'], 2,
      "Invalid --defer-until value: tomorrow. Give a duration from the apply's start (30m, 2h) or a time (2026-12-02T06:00Z)");
  });
});
