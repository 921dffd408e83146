/**
 * Issue 49, items 7 and 8: numbers that are right and no silence. Through the built CLI, on real
 * files and processes:
 *   - a run adopted after a kill -9 that ended while no dcm ran is timed from its own start to its
 *     own end (its status file), not until its adoption;
 *   - the report gives an exec strategy's timeouts (its config's, not `--state-timeout`) and its
 *     on_event;
 *   - a command on the default ./dcm.db says it found no file there, or created one;
 *   - after a delete, `strategy status` names the strategy kept;
 *   - a full disk is the SPEC's one line, for the apply that meets it and every one after.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, dcm, waitFor, type RunResult } from '../helpers/cli.js';
import { history, killLeftovers, micros, spawnDcm } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { runFiles } from '../helpers/logs.js';
import { dcmQuickOk } from '../helpers/quick.js';
import { parseTimestamp } from '../../src/domain/time.js';

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});
const db = () => ['--db', f.db];

describe('numbers that are right', () => {
  test('a run adopted after a kill -9, ended while no dcm ran: its history row ends when the run did', async () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const cfg = f.config(`
states:
  pre check: [sh, -c, 'sleep 1']
  "*": "true"
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--driver', 'exec', '--exec-config', cfg]);
    const first = spawnDcm([...db(), 'strategy', 'apply'], f.env);
    // Its process started (not only its history row opened): then dcm is killed.
    const sleeping = () => f.leftovers().some((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep\u0000');
      } catch {
        return false;
      }
    });
    await waitFor(sleeping, 30_000);
    first.child.kill('SIGKILL');
    await first.done;
    // The run goes on and ends while no dcm runs: its wrapper writes its status as its last act.
    const status = `${await runFiles(f.db, 's1', 1, 'pre check')}.status`;
    await waitFor(() => fs.existsSync(status), 30_000);
    const endedMs = fs.statSync(status).mtimeMs;
    // Adopted well after it ended.
    await waitFor(() => Date.now() > endedMs + 1500, 10_000, 100);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('resuming: 1 run(s) left by the last apply are still going or ended meanwhile');
    const run = history(f.db).find((h) => h.state === 'pre check')!;
    expect([run.attempt, run.outcome]).toEqual([1, 'ok']);
    // Its end is its status file's time (to the millisecond), before the apply that adopted it began.
    expect(Math.floor(micros(run.finished_at!) / 1000)).toBe(Math.floor(endedMs));
    const events = JSON.parse(dcm([...db(), 'strategy', 'events', '-f', 'json']).stdout) as { time: string; event: string }[];
    const adoptedBy = events.filter((e) => e.event === 'apply started')[1];
    expect(micros(run.finished_at!)).toBeLessThan(parseTimestamp(adoptedBy.time));
  }, 60_000);

  test("the report gives an exec strategy's timeouts from its config and its on_event", () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const cfg = f.config(`
defaults: {timeout: 2h}
states:
  applying VIM patch strategy: {run: "true", timeout: 5m}
  "*": "true"
on_event: cat > /dev/null
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--driver', 'exec', '--exec-config', cfg]);
    const html = path.join(f.dir, 'report.html');
    expect(dcm([...db(), 'strategy', 'report', '--html', html]).code).toBe(0);
    const page = fs.readFileSync(html, 'utf8');
    expect(page).not.toContain('--state-timeout');
    expect(page).toContain('<dd data-key="create timeout (exec config)">2h (pre check, updating patches, creating VIM patch strategy, finishing patch strategy); 5m (applying VIM patch strategy)</dd>');
    expect(page).toContain('<dd data-key="create on_event (exec config)">cat &gt; /dev/null</dd>');
  });
});

describe('no silence', () => {
  test('the default ./dcm.db: a read that finds no file says so, a write that creates one says so', () => {
    f = execFixture();
    const cwd = fs.mkdtempSync(path.join(f.dir, 'elsewhere-'));
    const where = path.join(fs.realpathSync(cwd), 'dcm.db');
    const list = dcm(['subcloud', 'list', '-f', 'value', '-c', 'name'], { cwd });
    expect([list.code, list.stdout]).toEqual([0, '<none>\n']);
    expect(list.stderr).toBe(`warning: no dcm file at ${where}: nothing read, nothing created; set DCM_DB or --db\n`);
    expect(fs.existsSync(where)).toBe(false);
    const add = dcm(['subcloud', 'add', 's1', '-f', 'value', '-c', 'name'], { cwd });
    expect([add.code, add.stdout]).toEqual([0, 's1\n']);
    expect(add.stderr).toBe(`warning: no dcm file at ${where}: created; set DCM_DB or --db to use another\n`);
    // Once it is there, nothing more is said; nor ever with --db or DCM_DB.
    expect(dcm(['subcloud', 'list', '-f', 'value', '-c', 'name'], { cwd }).stderr).toBe('');
    expect(dcm(['--db', path.join(cwd, 'other.db'), 'subcloud', 'list'], { cwd }).stderr).toBe('');
    expect(dcm(['subcloud', 'list'], { cwd, env: { DCM_DB: path.join(cwd, 'third.db') } }).stderr).toBe('');
  });

  test('after a delete, strategy status names the strategy kept and how to read it', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
    dcmQuickOk([...db(), 'strategy', 'delete']);
    const id = (JSON.parse(dcm([...db(), 'strategy', 'list', '-f', 'json']).stdout) as { id: string }[])[0].id;
    const r = dcm([...db(), 'strategy', 'status']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(
        `^error: Strategy not found: the last one \\(patch, initial\\) was deleted by \\S+@\\S+ at \\d{4}-\\d\\d-\\d\\d \\S+ and is kept as strategy ${id}: ` +
          `\`dcm strategy report --strategy ${id} --html FILE\`, \`dcm strategy events --strategy ${id}\`\n$`,
      ),
    );
    // Of another type: not found, as before.
    expect(dcm([...db(), 'strategy', 'status', '--type', 'firmware']).stderr).toBe("error: Strategy of type 'firmware' not found\n");
  });

  test('a full disk: the apply that meets it, and every apply after it, say the one line', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', ...Array.from({ length: 2000 }, (_, i) => `s${i}`)]);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--max-parallel-subclouds', '100']);
    const underLimit = (blocks: number): RunResult => {
      const r = spawnSync('sh', ['-c', `ulimit -f ${blocks} && exec '${process.execPath}' '${BIN}' --db '${f.db}' -q strategy apply`], { encoding: 'utf8' });
      return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
    };
    const full = `error: disk full writing ${f.db}: nothing committed was lost; free space, then dcm strategy apply resumes\n`;
    // Room for some of the rollout: it meets the full disk mid-way, and says so.
    const first = underLimit(Math.ceil((fs.statSync(f.db).size * 2) / 512));
    expect([first.code, first.stderr]).toEqual([1, full]);
    // Then, the disk still all but full: a little room over the file as it is now. The next
    // applies' first writes (the lock's) do not fit, and each says the same line: the second
    // full disk said SQLite's bare `disk I/O error`.
    const fileBlocks = Math.ceil(fs.statSync(f.db).size / 512);
    for (const room of [4, 24, 24]) expect(underLimit(fileBlocks + room)).toMatchObject({ code: 1, stderr: full });
    expect(dcm([...db(), 'db', 'check', '-f', 'value']).stdout).toBe('ok\n');
  }, 60_000);
});
