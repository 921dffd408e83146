/**
 * Text from outside dcm (README "Text from outside dcm"), with the built dcm and real processes: a
 * gate check's output, a run's output and a name typed on the command line reach the terminal
 * (apply's stderr, an error line), the record (`strategy events`, `strategy status`'s stage gates,
 * a step's details) and the report escaped and cut: a check that retitles and recolours the
 * terminal, or prints 3 MB of random bytes, leaves one short, visible line.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { waitFor } from '../helpers/cli.js';
import { json } from '../helpers/fleet.js';
import { killLeftovers, spawnDcm, steps, strategyState, tempPerTest } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { recordedEvents } from '../helpers/operator.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();
let f: ExecFixture | undefined;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
  f = undefined;
});

/** What a terminal would act on: any control character but a newline. */
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;
const HOSTILE = String.raw`printf 'x\033]0;PWN\007\033[31mred'; exit 4`;
const SHOWN = String.raw`x\x1b]0;PWN\x07\x1b[31mred`;
/** README: a line of outside text is cut to 200 characters. */
const LINE_MAX = 200;

const status = (db: string) => json<Record<string, string | number | null>>(dcmQuickOk(['--db', db, 'strategy', 'status', '-f', 'json']));

function twoStages(db: string): void {
  dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '1']);
  dcmQuickOk(['--db', db, 'subcloud-group', 'add', '--name', 'fleet', '--max_parallel_subclouds', '1']);
  dcmQuickOk(['--db', db, 'subcloud', 'add', 'c1', '--group', 'canary']);
  dcmQuickOk(['--db', db, 'subcloud', 'add', 'f1', '--group', 'fleet']);
}

/** Apply until the gate check paused it; every place the check's words reach, as text. */
async function pausedByCheck(db: string, check: string): Promise<{ stderr: string; gates: string; events: string; eventsTable: string; report: string }> {
  dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '10ms..30ms', '--stage-gate', 'check', '--gate-check', check]);
  const apply = spawnDcm(['--db', db, 'strategy', 'apply']);
  await waitFor(() => apply.stderr().includes('dcm: paused: stage 1 gate check exited 4'), 60_000, 20);
  expect(strategyState(db)).toBe('paused');
  const out = {
    stderr: apply.stderr(),
    gates: String(status(db)['stage gates']),
    events: recordedEvents(db).map((e) => e.details).join('\n'),
    eventsTable: dcmQuickOk(['--db', db, 'strategy', 'events']).stdout,
    report: dcmQuickOk(['--db', db, 'strategy', 'report', '--html', '-']).stdout,
  };
  apply.child.kill('SIGINT');
  await apply.done;
  return out;
}

describe("a gate check's output", () => {
  test('escape sequences are shown, not acted on: apply, status, events and the report', async () => {
    const t = temp();
    twoStages(t.db);
    const seen = await pausedByCheck(t.db, HOSTILE);
    for (const [where, text] of Object.entries(seen)) {
      expect([where, CONTROL.test(text.replace(/\n/g, ''))]).toEqual([where, false]);
    }
    const reason = `stage 1 gate check exited 4: ${SHOWN}; \`dcm strategy resume\` starts stage 2`;
    expect(seen.stderr).toContain(`dcm: paused: ${reason}`);
    expect(seen.gates).toBe(`stage 1: check: paused (${reason})\nstage 2: check (last stage: no gate after it)`);
    expect(seen.events).toContain(`stage 1: paused: ${reason}`);
    expect(seen.report).toContain(SHOWN);
  });

  test('3 MB of random bytes: one visible line, cut to the bound, in the record and on the terminal', async () => {
    const t = temp();
    twoStages(t.db);
    const seen = await pausedByCheck(t.db, 'head -c 3000000 /dev/urandom; exit 4');
    for (const [where, text] of Object.entries(seen)) {
      expect([where, CONTROL.test(text.replace(/\n/g, ''))]).toEqual([where, false]);
    }
    const m = /^stage 1: check: paused \(stage 1 gate check exited 4: (.*); `dcm strategy resume` starts stage 2\)$/m.exec(seen.gates);
    expect(m).not.toBeNull();
    expect(m![1].length).toBeGreaterThan(0);
    expect(m![1].length).toBeLessThanOrEqual(LINE_MAX);
    // The record holds that line and nothing more of the check's output.
    expect(seen.events.length).toBeLessThan(4 * LINE_MAX + 500);
    expect(Buffer.byteLength(seen.stderr)).toBeLessThan(8 * 1024);
  });
});

describe("a run's output and a name", () => {
  test("an exec run's failure: its last line escaped in apply's stderr and the step's details", async () => {
    f = execFixture();
    const fx = f;
    dcmQuickOk(['--db', fx.db, 'subcloud', 'add', 'c1']);
    const cfg = fx.config(`states:\n  "*":\n    run: ${JSON.stringify(`${HOSTILE.replace('exit 4', '')} >&2; exit 4`)}\n`);
    dcmQuickOk(['--db', fx.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    const r = await spawnDcm(['--db', fx.db, 'strategy', 'apply'], fx.env).done;
    expect(r.code).toBe(1);
    const details = steps(fx.db)[0].details;
    expect(details).toContain(`exit 4: ${SHOWN}`);
    expect(CONTROL.test(details)).toBe(false);
    expect(r.stderr).toContain(SHOWN);
    expect(CONTROL.test(r.stderr.replace(/\n/g, ''))).toBe(false);
    const list = dcmQuickOk(['--db', fx.db, 'strategy-step', 'list']).stdout;
    expect(CONTROL.test(list.replace(/\n/g, ''))).toBe(false);
  });

  test('a name typed on the command line: the error line shows it escaped', () => {
    const t = temp();
    const r = dcmQuick(['--db', t.db, 'subcloud', 'show', 'x\x1b]0;PWN\x07']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: Subcloud x\\x1b]0;PWN\\x07 does not exist\n');
    const long = dcmQuick(['--db', t.db, 'subcloud-group', 'show', `\x1b[31m${'n'.repeat(100_000)}`]);
    expect(long.code).toBe(1);
    expect(CONTROL.test(long.stderr.replace(/\n$/, ''))).toBe(false);
    expect(long.stderr.length).toBeLessThanOrEqual('error: \n'.length + 2000);
  });
});
