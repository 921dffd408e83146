/**
 * `dcm strategy-step logs` end to end (SPEC §7.2): the run logs of a subcloud in run order, the
 * filters, the errors, the strategy's log folder, and `--follow` against a real writer process
 * and a step ended by another connection to the file. The fixture's strategy (a sim one) stores
 * no log layout, as one created by an earlier dcm: its logs are read in layout 1, `DIR/<cloud>`,
 * where the tests write them; layout 2 (`DIR/<strategy id>/<cloud>`, every exec strategy created
 * now) and `--strategy` are in logs-strategies.test.ts.
 */
import { afterAll, afterEach, describe, expect, test } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expectRefused, Fixture, withSql } from '../helpers/fleet.js';
import { BIN, dcmSpawn, waitFor } from '../helpers/cli.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

/** Two subclouds with a patch strategy: s1 and s2 have steps. */
const fx = new Fixture((db) => {
  dcmQuickOk(['--db', db, 'subcloud', 'add', 's1', 's2', 's3']);
  dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch']);
});
afterAll(() => fx.cleanup());

const children: { kill: (s: NodeJS.Signals) => boolean }[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

function writeLogs(dir: string, cloud: string, files: Record<string, string>): string {
  const d = path.join(dir, cloud);
  fs.mkdirSync(d, { recursive: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(d, name), text);
  return d;
}

const S1_LOGS = {
  // Written in an order unlike the run order, and with the exec driver's other files beside them.
  '1-creating VIM patch strategy.log': 'vim created\n',
  '2-updating patches.log': 'second try\nok\n',
  '1-pre check.log': 'checking s1\n',
  '1-updating patches.log': 'boom\n',
  '1-updating patches.status': '1\n',
};

describe('strategy-step logs', () => {
  test('every run of the subcloud in run order, a tail-like header before each', () => {
    const t = fx.fresh();
    writeLogs(`${t.db}.logs`, 's1', S1_LOGS);
    const r = dcmQuick(['--db', t.db, 'strategy-step', 'logs', 's1']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        '==> attempt 1, pre check <==',
        'checking s1',
        '',
        '==> attempt 1, updating patches <==',
        'boom',
        '',
        '==> attempt 2, updating patches <==',
        'second try',
        'ok',
        '',
        '==> attempt 1, creating VIM patch strategy <==',
        'vim created',
        '',
      ].join('\n'),
    );
  });

  test('--state and --attempt pick runs; one run prints without a header, byte for byte', () => {
    const t = fx.fresh();
    const d = writeLogs(`${t.db}.logs`, 's1', S1_LOGS);
    const bytes = Buffer.concat([Buffer.from('no newline at the end \u00fc '), Buffer.from([0xff, 0x00, 0x41])]);
    fs.writeFileSync(path.join(d, '1-pre check.log'), bytes);
    const one = spawnSync(process.execPath, [BIN, '--db', t.db, 'strategy-step', 'logs', 's1', '--state', 'pre check']);
    expect(one.status).toBe(0);
    expect(one.stdout.equals(bytes)).toBe(true);
    const two = dcmQuickOk(['--db', t.db, 'strategy-step', 'logs', 's1', '--state', 'updating patches']).stdout;
    expect(two).toBe('==> attempt 1, updating patches <==\nboom\n\n==> attempt 2, updating patches <==\nsecond try\nok\n');
    expect(dcmQuickOk(['--db', t.db, 'strategy-step', 'logs', 's1', '--attempt', '2']).stdout).toBe('second try\nok\n');
    expect(dcmQuickOk(['--db', t.db, 'strategy-step', 'logs', 's1', '--state', 'updating patches', '--attempt', '1']).stdout).toBe('boom\n');
  });

  test('a reader that stops early (| head -1) ends it quietly with exit 0', () => {
    const t = fx.fresh();
    writeLogs(`${t.db}.logs`, 's1', { '1-pre check.log': 'x'.repeat(79).concat('\n').repeat(100_000) });
    const r = spawnSync('/bin/bash', ['-c', 'node "$BIN" --db "$DB" strategy-step logs s1 | head -1; echo "exit ${PIPESTATUS[0]}" >&2'], {
      env: { ...process.env, BIN, DB: t.db },
      encoding: 'utf8',
    });
    expect(r.stdout).toBe(`${'x'.repeat(79)}\n`);
    expect(r.stderr).toBe('exit 0\n');
  });

  test('no logs: a note on stderr, nothing on stdout, exit 0', () => {
    const t = fx.fresh();
    writeLogs(`${t.db}.logs`, 's1', S1_LOGS);
    const none = dcmQuick(['--db', t.db, 'strategy-step', 'logs', 's2']);
    expect(none).toMatchObject({ code: 0, stdout: '' });
    expect(none.stderr).toBe(`dcm: no run logs for s2 (in ${path.join(`${t.db}.logs`, 's2')})\n`);
    const filtered = dcmQuick(['--db', t.db, 'strategy-step', 'logs', 's1', '--state', 'finishing patch strategy', '--attempt', '3']);
    expect(filtered).toMatchObject({ code: 0, stdout: '' });
    expect(filtered.stderr).toMatch(/^dcm: no run logs for s1 in state 'finishing patch strategy' attempt 3 \(in .*\)\n$/);
  });

  test('errors: unknown cloud exit 1, a state the type does not have exit 2 listing them, a bad attempt exit 2', () => {
    const t = fx.fresh();
    writeLogs(`${t.db}.logs`, 's1', S1_LOGS);
    expectRefused(t.dir, ['--db', t.db, 'strategy-step', 'logs', 'nosuch'], 1, 'Subcloud nosuch does not exist');
    expectRefused(
      t.dir,
      ['--db', t.db, 'strategy-step', 'logs', 's1', '--state', 'pre-check'],
      2,
      "invalid state 'pre-check' for a patch strategy: choose from 'pre check', 'updating patches', " +
        "'creating VIM patch strategy', 'applying VIM patch strategy', 'finishing patch strategy'",
    );
    expectRefused(t.dir, ['--db', t.db, 'strategy-step', 'logs', 's1', '--attempt', '0'], 2, /'0' is invalid\. must be 1 or more$/);
    expectRefused(t.dir, ['--db', t.db, 'strategy-step', 'logs', 's1', '--attempt', 'x'], 2, /'x' is invalid/);
    expectRefused(t.dir, ['--db', t.db, 'strategy-step', 'logs'], 2, /missing required argument 'cloud'/);
    // No file: the cloud cannot exist, and no file is created.
    const empty = fx.fresh(true);
    expectRefused(empty.dir, ['--db', empty.db, 'strategy-step', 'logs', 's1'], 1, 'Subcloud s1 does not exist');
  });

  test("the strategy's log folder (log_dir) is read when set; without a strategy, none is read and any type's state is valid", async () => {
    const t = fx.fresh();
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-logs-'));
    try {
      writeLogs(elsewhere, 's1', { '1-pre check.log': 'from the log dir\n' });
      writeLogs(`${t.db}.logs`, 's1', { '1-pre check.log': 'from the default dir\n' });
      await withSql(t.db, (d) => d.prepare("UPDATE strategy SET extra_args = json_set(extra_args, '$.log_dir', ?)").run(elsewhere));
      expect(dcmQuickOk(['--db', t.db, 'strategy-step', 'logs', 's1']).stdout).toBe('from the log dir\n');
      dcmQuickOk(['--db', t.db, 'strategy', 'delete']);
      // The logs of a deleted strategy are its own, read with --strategy (logs-strategies.test.ts).
      const none = dcmQuick(['--db', t.db, 'strategy-step', 'logs', 's1']);
      expect(none).toMatchObject({ code: 0, stdout: '', stderr: 'dcm: no strategy, so no run logs for s1\n' });
      expect(dcmQuick(['--db', t.db, 'strategy-step', 'logs', 's1', '--state', 'prestage-prepare']).code).toBe(0);
      expect(dcmQuick(['--db', t.db, 'strategy-step', 'logs', 's1', '--state', 'nosuch']).stderr).toMatch(
        /^error: invalid state 'nosuch' for any strategy type: choose from 'pre check', .*'prestaging-images'\n$/,
      );
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});

describe('strategy-step logs --follow', () => {
  /** s1 mid-way through its update, as an orchestrator would leave it. */
  async function applying(db: string): Promise<void> {
    await withSql(db, async (d) => {
      await d.prepare("UPDATE strategy SET state = 'applying'").run();
      await d.prepare("UPDATE strategy_step SET state = 'pre check' WHERE subcloud_id = 1").run();
    });
  }

  test('prints output as a writer process appends it and new runs as they start; exits 0 once the step has ended and the logs are drained', async () => {
    const t = fx.fresh();
    await applying(t.db);
    const d = writeLogs(`${t.db}.logs`, 's1', { '1-pre check.log': 'start\n' });
    const follow = dcmSpawn(['--db', t.db, 'strategy-step', 'logs', 's1', '--follow']);
    children.push(follow.child);
    let out = '';
    follow.child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    await waitFor(() => out.includes('start\n'), 15_000);

    // A real writer: appends over time, then the next run's log appears, then the last line of it.
    const script = [
      'for i in 1 2 3; do echo "line $i" >> "$A"; sleep 0.1; done',
      'echo "run two" > "$B"',
      'sleep 0.3',
      'printf "last words" >> "$B"',
    ].join('; ');
    const writer = spawn('/bin/sh', ['-c', script], {
      env: { ...process.env, A: path.join(d, '1-pre check.log'), B: path.join(d, '1-updating patches.log') },
      stdio: 'ignore',
    });
    children.push(writer);
    await waitFor(() => out.includes('run two'), 15_000);
    await new Promise((r) => writer.on('exit', r));
    // Still following: the step has not ended.
    expect(follow.child.exitCode).toBeNull();

    await withSql(t.db, (db) => db.prepare("UPDATE strategy_step SET state = 'complete' WHERE subcloud_id = 1").run());
    const r = await follow.done;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(out).toBe(
      '==> attempt 1, pre check <==\nstart\nline 1\nline 2\nline 3\n\n==> attempt 1, updating patches <==\nrun two\nlast words',
    );
  });

  test('waits for the first log; a strategy that ends (abort) ends the follow; nothing written: the note', async () => {
    const t = fx.fresh();
    await applying(t.db);
    const follow = dcmSpawn(['--db', t.db, 'strategy-step', 'logs', 's2', '--follow']);
    children.push(follow.child);
    // s2 has not started: the follow waits for it.
    await new Promise((r) => setTimeout(r, 600));
    expect(follow.child.exitCode).toBeNull();
    await withSql(t.db, async (db) => {
      await db.prepare("UPDATE strategy_step SET state = 'aborted' WHERE subcloud_id = 2").run();
      await db.prepare("UPDATE strategy SET state = 'aborted'").run();
    });
    const r = await follow.done;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^dcm: no run logs for s2 \(in .*\)\n$/);
  });

  test('a step already ended prints what there is and exits; Ctrl-C while following exits 130', async () => {
    const t = fx.fresh();
    writeLogs(`${t.db}.logs`, 's1', { '1-pre check.log': 'done\n' });
    await withSql(t.db, (d) => d.prepare("UPDATE strategy_step SET state = 'complete' WHERE subcloud_id = 1").run());
    expect(dcmQuickOk(['--db', t.db, 'strategy-step', 'logs', 's1', '--follow', '--state', 'pre check', '--attempt', '1']).stdout).toBe('done\n');

    await applying(t.db);
    const follow = dcmSpawn(['--db', t.db, 'strategy-step', 'logs', 's1', '--follow']);
    children.push(follow.child);
    let out = '';
    follow.child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    await waitFor(() => out.includes('done\n'), 15_000);
    follow.child.kill('SIGINT');
    const r = await follow.done;
    expect(r.code).toBe(130);
    expect(r.stderr).toBe('');
  });
});
