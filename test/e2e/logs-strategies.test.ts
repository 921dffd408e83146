/**
 * Issue 19, "Logs belong to their strategy", end to end with the built bin and the exec driver:
 * each strategy's runs write `DIR/<strategy id>/<cloud>/<attempt>-<state>.log` (no spaces in any
 * name), kept after `strategy delete`; `strategy-step logs` prints the current strategy's runs
 * only, an earlier one's with `--strategy ID`; `db prune-logs --older` removes deleted strategies'
 * folders once every file in them is old enough, never the current one's. A strategy created
 * before the layout (no version stored) keeps the old one for everything: its runs write, are
 * adopted after a kill -9, and are read where an earlier dcm put them.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, waitFor } from '../helpers/cli.js';
import { expectRefused, withSql } from '../helpers/fleet.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { history, killLeftovers, spawnDcm, steps } from '../helpers/history.js';
import { strategyId } from '../helpers/logs.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

const CLOUDS = ['s1', 'site 2'];

/** Every path under `dir`, relative to it. */
function tree(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? [e.name, ...tree(p).map((n) => `${e.name}/${n}`)] : [e.name];
  });
}

/** Every file under `dir`, dated `ms` ago (the folders too): logs left long ago, without waiting. */
function age(dir: string, ms: number): void {
  const then = new Date(Date.now() - ms);
  for (const rel of tree(dir)) fs.utimesSync(path.join(dir, rel), then, then);
  fs.utimesSync(dir, then, then);
}

function bytesUnder(dir: string): number {
  return tree(dir).reduce((sum, rel) => {
    const st = fs.lstatSync(path.join(dir, rel));
    return st.isDirectory() ? sum : sum + st.size;
  }, 0);
}

/** A patch strategy of the exec driver whose every run prints `<word>: <cloud> <state>`. */
function createStrategy(word: string): void {
  const cfg = f.config(`
states:
  "*": [sh, -c, 'echo "${word}: $DCM_CLOUD $DCM_STATE"']
`, `${word}.yaml`);
  dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
}

function applyOk(): void {
  const r = dcm(['--db', f.db, 'strategy', 'apply', '-q'], { env: f.env });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
}

/** create, apply, delete, create, apply: the ids of the first and of the second (current) strategy. */
async function twoStrategies(): Promise<{ first: string; second: string; firstCreatedAt: string }> {
  dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...CLOUDS]);
  createStrategy('first');
  const first = await strategyId(f.db);
  const firstCreatedAt = (JSON.parse(dcmQuickOk(['--db', f.db, 'strategy', 'show', '-f', 'json']).stdout) as { created_at: string }).created_at;
  applyOk();
  dcmQuickOk(['--db', f.db, 'strategy', 'delete']);
  // The first completed every subcloud; the second has them to do again.
  dcmQuickOk(['--db', f.db, 'subcloud', 'update', ...CLOUDS, '--sync', 'all=out-of-sync']);
  createStrategy('second');
  const second = await strategyId(f.db);
  applyOk();
  expect(second).not.toBe(first);
  return { first, second, firstCreatedAt };
}

const PRE = 'pre check';

describe('run logs belong to their strategy', () => {
  test('two strategies on one file: each has its own folder, kept after delete; logs prints the current one, --strategy an earlier one', async () => {
    f = execFixture();
    const { first, second, firstCreatedAt } = await twoStrategies();
    const logDir = `${f.db}.logs`;
    // Both folders, the deleted strategy's included, and nothing else at the top.
    expect(fs.readdirSync(logDir).sort()).toEqual([first, second].sort());
    // No white space in any name: a space is '-', a '-' is '_'.
    const names = tree(logDir);
    expect(names.filter((n) => /\s/.test(n))).toEqual([]);
    expect(names).toContain(`${second}/site-2/1-pre-check.log`);
    expect(names).toContain(`${second}/s1/1-creating-VIM-patch-strategy.log`);
    expect(names.filter((n) => n.endsWith('.log'))).toHaveLength(2 * CLOUDS.length * 5);

    // The current strategy's runs only.
    for (const cloud of CLOUDS) {
      const out = dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', cloud]).stdout;
      expect(out).toContain(`==> attempt 1, ${PRE} <==\nsecond: ${cloud} ${PRE}\n`);
      expect(out).not.toContain('first');
      expect(out.match(/^==> /gm)).toHaveLength(5);
      expect(dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', cloud, '--state', PRE]).stdout).toBe(`second: ${cloud} ${PRE}\n`);
    }
    // The deleted one's, by its id or by its created_at; its own current id reads the current.
    expect(dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 'site 2', '--strategy', first, '--state', PRE]).stdout).toBe(`first: site 2 ${PRE}\n`);
    expect(dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 's1', '--strategy', firstCreatedAt, '--state', PRE]).stdout).toBe(`first: s1 ${PRE}\n`);
    const all = dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 's1', '--strategy', first]).stdout;
    expect(all.match(/^==> attempt 1, .* <==$/gm)).toEqual([
      '==> attempt 1, pre check <==',
      '==> attempt 1, updating patches <==',
      '==> attempt 1, creating VIM patch strategy <==',
      '==> attempt 1, applying VIM patch strategy <==',
      '==> attempt 1, finishing patch strategy <==',
    ]);
    expect(all).not.toContain('second');
    expect(dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 's1', '--strategy', second, '--state', PRE]).stdout).toBe(`second: s1 ${PRE}\n`);
    // An earlier strategy's logs are complete: --follow prints them and exits, though the current one has not ended.
    await withSql(f.db, (d) => d.prepare("UPDATE strategy SET state = 'applying'").run());
    await withSql(f.db, (d) => d.prepare("UPDATE strategy_step SET state = 'pre check'").run());
    expect(dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 's1', '--strategy', first, '--follow', '--state', PRE]).stdout).toBe(`first: s1 ${PRE}\n`);
    await withSql(f.db, (d) => d.prepare("UPDATE strategy_step SET state = 'complete'").run());
    await withSql(f.db, (d) => d.prepare("UPDATE strategy SET state = 'complete'").run());
    // An earlier strategy's subcloud may be gone since: its logs are still read.
    dcmQuickOk(['--db', f.db, 'strategy', 'delete']);
    dcmQuickOk(['--db', f.db, 'subcloud', 'delete', 'site 2']);
    expect(dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 'site 2', '--strategy', first, '--state', PRE]).stdout).toBe(`first: site 2 ${PRE}\n`);

    // With no strategy, none is current: a note naming the ids to read (newest first).
    const none = dcmQuick(['--db', f.db, 'strategy-step', 'logs', 's1']);
    expect(none).toMatchObject({ code: 0, stdout: '' });
    expect(none.stderr).toBe(`dcm: no strategy, so no run logs for s1; earlier strategies' are read with --strategy ID (${second}, ${first})\n`);
  }, 60_000);

  test('--strategy errors: an id without logs is not found (exit 1), a malformed one a usage error (exit 2); nothing changes', async () => {
    f = execFixture();
    const { first } = await twoStrategies();
    const missing = `${first.slice(0, -1)}${(Number(first.slice(-1)) + 1) % 10}`;
    expectRefused(f.dir, ['--db', f.db, 'strategy-step', 'logs', 's1', '--strategy', missing], 1, `no run logs of strategy ${missing} (in ${f.db}.logs)`);
    for (const bad of ['../x', '1', 'latest', '']) {
      expectRefused(f.dir, ['--db', f.db, 'strategy-step', 'logs', 's1', '--strategy', bad], 2, new RegExp(`^invalid strategy id '${bad.replace(/\./g, '\\.')}': give the id`));
    }
    // A state none of the types has, for an earlier strategy of unknown type: exit 2, listing them.
    expectRefused(f.dir, ['--db', f.db, 'strategy-step', 'logs', 's1', '--strategy', first, '--state', 'nosuch'], 2, /^invalid state 'nosuch' for any strategy type: choose from 'pre check', /);
  }, 60_000);

  test('db prune-logs: removes a deleted strategy\'s folder once all its files are older than DURATION, never the current one\'s', async () => {
    f = execFixture();
    const { first, second } = await twoStrategies();
    const logDir = `${f.db}.logs`;
    const firstDir = path.join(logDir, first);
    const secondDir = path.join(logDir, second);
    const prune = (...args: string[]) => dcmQuick(['--db', f.db, 'db', 'prune-logs', ...args]);

    // Fresh files: nothing is old enough.
    expect(prune('--older', '1h')).toMatchObject({ code: 0, stdout: 'removed 0 log folders of deleted strategies (0 bytes)\n', stderr: '' });
    expect(fs.existsSync(firstDir)).toBe(true);

    // Two hours old, the current strategy's as well; one file of the first left fresh.
    age(firstDir, 2 * 3_600_000);
    age(secondDir, 2 * 3_600_000);
    const fresh = path.join(firstDir, 's1', '1-pre-check.log');
    fs.utimesSync(fresh, new Date(), new Date());
    expect(prune('--older', '1h').stdout).toBe('removed 0 log folders of deleted strategies (0 bytes)\n');
    age(firstDir, 2 * 3_600_000);

    // Younger than 3h, older than 1h.
    expect(prune('--older', '3h').stdout).toBe('removed 0 log folders of deleted strategies (0 bytes)\n');
    const bytes = bytesUnder(firstDir);
    expect(bytes).toBeGreaterThan(0);
    const dry = prune('--older', '1h', '--dry-run');
    expect(dry).toMatchObject({ code: 0, stdout: `would remove 1 log folder of deleted strategies (${bytes} bytes)\n`, stderr: `would remove ${firstDir}\n` });
    expect(fs.existsSync(firstDir)).toBe(true);
    const r = prune('--older', '1h');
    expect(r).toMatchObject({ code: 0, stdout: `removed 1 log folder of deleted strategies (${bytes} bytes)\n`, stderr: `removed ${firstDir}\n` });
    expect(fs.existsSync(firstDir)).toBe(false);
    // The current strategy's folder stays, however old, and is still read.
    expect(fs.readdirSync(logDir)).toEqual([second]);
    expect(prune('--older', '0s', '-q').stdout).toBe('removed 0 log folders of deleted strategies (0 bytes)\n');
    expect(dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 's1', '--state', PRE]).stdout).toBe(`second: s1 ${PRE}\n`);

    // Once deleted, the second goes too, in days.
    dcmQuickOk(['--db', f.db, 'strategy', 'delete']);
    expect(prune('--older', '1d').stdout).toBe('removed 0 log folders of deleted strategies (0 bytes)\n');
    expect(prune('--older', '0.05d', '-q').stdout).toMatch(/^removed 1 log folder of deleted strategies \(\d+ bytes\)\n$/);
    expect(fs.readdirSync(logDir)).toEqual([]);
  }, 60_000);

  test('db prune-logs refuses a bad DURATION (exit 2, one line) and a missing file (exit 1), changing nothing', async () => {
    f = execFixture();
    const { first } = await twoStrategies();
    age(path.join(`${f.db}.logs`, first), 2 * 3_600_000);
    const before = tree(`${f.db}.logs`);
    for (const [bad, why] of [
      ['7', 'Give a unit: 7h, 7d'],
      ['7x', 'Use a number and a unit: 12h, 7d, 30m'],
      ['', 'Use a number and a unit: 12h, 7d, 30m'],
      ['-1h', 'Use a number and a unit: 12h, 7d, 30m'],
      ['400d', 'The longest is 8760h (365 days)'],
    ]) {
      expectRefused(f.dir, ['--db', f.db, 'db', 'prune-logs', '--older', bad], 2, `Invalid --older value: ${bad}. ${why}`);
    }
    expectRefused(f.dir, ['--db', f.db, 'db', 'prune-logs'], 2, "required option '--older <duration>' not specified");
    expect(tree(`${f.db}.logs`)).toEqual(before);
    expectRefused(f.dir, ['--db', path.join(f.dir, 'none.db'), 'db', 'prune-logs', '--older', '1h'], 1, `${path.join(f.dir, 'none.db')} does not exist`);
  }, 60_000);
});

/** History rows still running, with the process recorded for them. */
function startedRun(db: string): { cloud: string; state: string; pid: number | null } | undefined {
  const d = new Database(db, { readonly: true });
  try {
    return d
      .prepare(
        `SELECT sc.name AS cloud, h.state, h.pid FROM step_history h JOIN strategy_step st ON st.id = h.step_id
         JOIN subcloud sc ON sc.id = st.subcloud_id WHERE h.outcome = 'running' AND h.pid IS NOT NULL`,
      )
      .get() as { cloud: string; state: string; pid: number | null } | undefined;
  } finally {
    d.close();
  }
}

describe('a strategy created before the layout (no version stored) keeps the old one', () => {
  test('it applies, its run left going by a kill -9 is adopted, and logs reads it where it was written', async () => {
    f = execFixture();
    const gate = path.join(f.dir, 'gate');
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', 's1']);
    const logDir = `${f.db}.logs`;
    // An earlier (old-layout) strategy's log, written before this one was created: not this one's.
    fs.mkdirSync(path.join(logDir, 's1'), { recursive: true });
    fs.writeFileSync(path.join(logDir, 's1', '2-pre check.log'), 'an earlier strategy\n');
    age(path.join(logDir, 's1'), 3_600_000);
    const cfg = f.config(`
states:
  pre check:
    run: 'echo "old layout, waiting"; while [ ! -e "$GATE" ]; do sleep 0.05; done; echo "old layout, done"'
  "*": [sh, -c, 'echo "old layout: $DCM_STATE"']
`);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    // As an earlier dcm stored it: no layout version.
    await withSql(f.db, (d) => d.prepare("UPDATE strategy SET extra_args = json_remove(extra_args, '$.log_layout')").run());
    expect(await withSql(f.db, (d) => d.prepare("SELECT json_extract(extra_args, '$.log_layout') FROM strategy").pluck().get())).toBeNull();

    const env = { ...f.env, GATE: gate };
    const first = spawnDcm(['--db', f.db, 'strategy', 'apply'], env);
    await waitFor(() => startedRun(f.db) !== undefined, 20_000);
    const oldLog = path.join(logDir, 's1', '1-pre check.log');
    await waitFor(() => fs.existsSync(oldLog) && fs.readFileSync(oldLog, 'utf8').includes('waiting'), 20_000);
    first.child.kill('SIGKILL');
    await first.done;

    // The run goes on; the next apply finds it by its old-layout pid and status files and waits for it.
    const second = spawnDcm(['--db', f.db, 'strategy', 'apply'], env);
    await waitFor(() => /still going or ended meanwhile/.test(second.stderr()) || second.child.exitCode !== null, 30_000);
    expect(second.stderr()).toContain('still going or ended meanwhile');
    fs.writeFileSync(gate, '');
    const r = await second.done;
    expect(r.code).toBe(0);
    expect(steps(f.db).map((s) => s.state)).toEqual(['complete']);
    // Adopted, not run again.
    expect(history(f.db, 's1').filter((h) => h.state === PRE).map((h) => [h.attempt, h.outcome])).toEqual([[1, 'ok']]);

    // Every run wrote where an earlier dcm would have: DIR/<cloud>/<attempt>-<state>, no strategy folder.
    expect(fs.readdirSync(logDir)).toEqual(['s1']);
    expect(fs.readdirSync(path.join(logDir, 's1')).filter((n) => n.endsWith('.log')).sort()).toEqual([
      '1-applying VIM patch strategy.log',
      '1-creating VIM patch strategy.log',
      '1-finishing patch strategy.log',
      '1-pre check.log',
      '1-updating patches.log',
      '2-pre check.log',
    ]);
    expect(fs.readFileSync(oldLog, 'utf8')).toBe('old layout, waiting\nold layout, done\n');
    // logs reads them there, and only this strategy's: the earlier one's attempt 2 is not printed.
    expect(dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 's1', '--state', PRE]).stdout).toBe('old layout, waiting\nold layout, done\n');
    const all = dcmQuickOk(['--db', f.db, 'strategy-step', 'logs', 's1']).stdout;
    expect(all.match(/^==> .* <==$/gm)).toHaveLength(5);
    expect(all).not.toContain('an earlier strategy');
    expect(all).toContain('==> attempt 1, updating patches <==\nold layout: updating patches\n');
    // prune-logs leaves old-layout folders alone: no strategy owns them.
    expect(dcmQuickOk(['--db', f.db, 'db', 'prune-logs', '--older', '0s']).stdout).toBe('removed 0 log folders of deleted strategies (0 bytes)\n');
    expect(fs.readdirSync(logDir)).toEqual(['s1']);
  }, 90_000);
});
