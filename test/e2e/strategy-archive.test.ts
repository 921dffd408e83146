/**
 * Issue 34, item 4, "Strategies kept after delete", end to end with the built bin: `strategy
 * delete` keeps the record (steps, runs, events, options) under the strategy's id; the next
 * strategy is created at once and counts none of it; `strategy list` shows both; `strategy report`
 * and `strategy events` read the kept one by `--strategy ID`; `db prune --older` removes the kept
 * ones deleted longer ago than that (on the test clock, never by waiting), with their run logs;
 * bad input is one line, its exit code, and no change.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm } from '../helpers/cli.js';
import { expectRefused, withSql } from '../helpers/fleet.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { killLeftovers } from '../helpers/history.js';
import { isPgUrl } from '../../src/domain/db-url.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

interface ListRow {
  id: string;
  'strategy type': string;
  state: string;
  steps: number;
  complete: number;
  failed: number;
  created_at: string;
  updated_at: string | null;
  deleted_at: string | null;
  deleted_by: string | null;
}

function bytesUnder(dir: string): number {
  return fs.readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
    const p = path.join(dir, e.name);
    return sum + (e.isDirectory() ? bytesUnder(p) : fs.statSync(p).size);
  }, 0);
}

const db = () => ['--db', f.db];
const json = <T>(args: string[]): T => JSON.parse(dcmQuickOk([...db(), ...args, '-f', 'json']).stdout) as T;
const listed = () => json<ListRow[]>(['strategy', 'list']);
const eventsOf = (id?: string) =>
  json<{ event: string; user: string; details: string; reason: string | null }[]>(['strategy', 'events', ...(id ? ['--strategy', id] : [])]);
/** Everything a reader sees of the kept and current strategies: unchanged by a refused command. */
const seen = (ids: string[]) => [dcmQuickOk([...db(), 'strategy', 'list', '-f', 'json']).stdout, ...ids.map((id) => dcmQuickOk([...db(), 'strategy', 'events', '--strategy', id, '-f', 'json']).stdout)];

/** The first strategy, failed at s2, deleted; the second created for s2 again: the 3 a.m. re-create. */
function failDeleteRecreate(): { first: ListRow; deleteNote: string } {
  dcmQuickOk([...db(), 'subcloud', 'add', 's1', 's2', 's3']);
  dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--sim-fail', 's2=pre check']);
  expect(dcm([...db(), '-q', 'strategy', 'apply'], { env: { USER: 'alice' } }).code).toBe(1);
  const [first] = listed();
  expect(first).toMatchObject({ 'strategy type': 'patch', state: 'failed', steps: 3, complete: 2, failed: 1, deleted_at: null });
  const del = dcmQuickOk([...db(), 'strategy', 'delete', '--reason', 'canary fix: re-create'], { env: { USER: 'bob', DCM_HOST: 'ops1' } });
  expect(JSON.parse(dcmQuickOk([...db(), 'strategy', 'list', '-f', 'json']).stdout)).toHaveLength(1);
  dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
  return { first, deleteNote: del.stderr };
}

describe('strategies kept after delete', () => {
  test('create, apply, delete, create again: the old record is listed and read by its id; the current strategy counts none of it', () => {
    f = execFixture();
    const { first, deleteNote } = failDeleteRecreate();
    expect(deleteNote).toBe(
      `kept as strategy ${first.id}: strategy report --strategy ${first.id} and strategy events --strategy ${first.id} read it; db prune removes it\n`,
    );
    // The current strategy is the new one: one step (s2, still out of sync), no events, nothing of the old.
    expect(dcmQuickOk([...db(), 'strategy-step', 'list', '-f', 'value', '-c', 'cloud']).stdout).toBe('s2\n');
    expect(dcmQuickOk([...db(), 'strategy', 'events', '-f', 'value', '-c', 'event']).stdout).toBe('<none>\n');
    expect(json<Record<string, unknown>>(['strategy', 'show']).state).toBe('initial');

    // Both listed: the kept one first, with who deleted it and when; the current one not deleted.
    const rows = listed();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toEqual({ ...first, deleted_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$/), deleted_by: 'bob@ops1' });
    expect(rows[1]).toMatchObject({ 'strategy type': 'patch', state: 'initial', steps: 1, complete: 0, failed: 0, deleted_at: null, deleted_by: null });
    expect(rows[1].id).not.toBe(first.id);

    // Its events, the delete last with who and why; by id and by created_at alike.
    const ev = eventsOf(first.id);
    expect(ev.map((e) => e.event)).toEqual(['apply started', 'apply ended', 'deleted']);
    expect(ev[0].user).toBe('alice');
    expect(ev[2]).toMatchObject({ user: 'bob', details: `failed, kept as strategy ${first.id}`, reason: 'canary fix: re-create' });
    expect(eventsOf(first.created_at)).toEqual(ev);
    expect(json<unknown[]>(['patch-strategy', 'events', '--strategy', first.id])).toEqual(ev);

    // Its report: the old strategy's steps, failure and events, not the current one's.
    const html = path.join(f.dir, 'before.html');
    const rep = dcmQuickOk([...db(), 'strategy', 'report', '--strategy', first.id, '--html', html, '-f', 'json']);
    expect(JSON.parse(rep.stdout)).toMatchObject({ state: 'failed', steps: 3, complete: 2, failed: 1 });
    const page = fs.readFileSync(html, 'utf8');
    for (const text of ['s1', 's2', 's3', 'canary fix: re-create', 'deleted']) expect(page).toContain(text);
    // The current one's report is the current one's.
    const now = dcmQuickOk([...db(), 'strategy', 'report', '--html', path.join(f.dir, 'now.html'), '-f', 'json']);
    expect(JSON.parse(now.stdout)).toMatchObject({ state: 'initial', steps: 1 });

    // The next apply runs only the current strategy's step; the kept record stays as it was.
    expect(dcm([...db(), '-q', 'strategy', 'apply']).code).toBe(0);
    expect(listed()[0]).toEqual(rows[0]);
    expect(listed()[1]).toMatchObject({ state: 'complete', steps: 1, complete: 1 });
    // A type alias lists and reads its type only.
    expect(dcmQuickOk([...db(), 'kube-upgrade-strategy', 'list', '-f', 'value', '-c', 'id']).stdout).toBe('<none>\n');
    expect(dcmQuickOk([...db(), 'patch-strategy', 'list', '-f', 'value', '-c', 'id']).stdout).toBe(`${first.id}\n${rows[1].id}\n`);
    expectRefused(f.dir, [...db(), 'kube-upgrade-strategy', 'events', '--strategy', first.id], 1, "Strategy of type 'kubernetes' not found");
  }, 120_000);

  test('db prune --older removes the strategies deleted longer ago, with their run logs; never a newer one nor the current one', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', 's2']);
    const cfg = f.config(`
states:
  "*": [sh, -c, 'echo "$DCM_CLOUD $DCM_STATE"']
`);
    // Its own folder, on either store (a PostgreSQL store's default is beside the working directory).
    const logs = path.join(f.dir, 'run-logs');
    const createApply = () => {
      dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg, '--log-dir', logs]);
      expect(dcm([...db(), 'strategy', 'apply', '-q'], { env: f.env }).code).toBe(0);
    };
    for (let i = 0; i < 2; i++) {
      createApply();
      dcmQuickOk([...db(), 'strategy', 'delete']);
      dcmQuickOk([...db(), 'subcloud', 'update', 's1', 's2', '--sync', 'all=out-of-sync']);
    }
    createApply();
    const [first, second, current] = listed();
    expect([first.deleted_at === null, second.deleted_at === null, current.deleted_at]).toEqual([false, false, null]);
    const folders = () => fs.readdirSync(logs).sort();
    expect(folders()).toEqual([first.id, second.id, current.id].sort());
    const bytes = bytesUnder(path.join(logs, first.id));
    expect(bytes).toBeGreaterThan(0);

    // The test clock a day past the middle of the two deletes: the first was deleted more than a
    // day ago, the second less. No waiting.
    const at = (t: string) => Date.parse(`${t.replace(' ', 'T').slice(0, 23)}Z`);
    const clock = new Date((at(first.deleted_at!) + at(second.deleted_at!)) / 2 + 86_400_000).toISOString();
    const env = { DCM_TEST_HOOKS: '1', DCM_TEST_CLOCK: clock };
    const firstDir = path.join(logs, first.id);
    const dry = dcmQuickOk([...db(), 'db', 'prune', '--older', '1d', '--dry-run'], { env });
    expect(dry.stdout).toBe(`would remove 1 deleted strategy and 1 log folder (${bytes} bytes)\n`);
    expect(dry.stderr).toBe(`would remove strategy ${first.id} (patch, complete, deleted ${first.deleted_at})\nwould remove ${path.resolve(firstDir)}\n`);
    expect(listed()).toHaveLength(3);
    expect(folders()).toHaveLength(3);

    const r = dcmQuickOk([...db(), 'db', 'prune', '--older', '1d'], { env });
    expect(r.stdout).toBe(`removed 1 deleted strategy and 1 log folder (${bytes} bytes)\n`);
    expect(listed().map((x) => x.id)).toEqual([second.id, current.id]);
    expect(folders()).toEqual([second.id, current.id].sort());
    expect(dcmQuick([...db(), 'strategy', 'events', '--strategy', first.id]).code).toBe(1);
    expect(eventsOf(second.id).map((e) => e.event)).toEqual(['apply started', 'apply ended', 'deleted']);
    // Again: nothing more is that old.
    expect(dcmQuickOk([...db(), 'db', 'prune', '--older', '1d'], { env }).stdout).toBe('removed 0 deleted strategies and 0 log folders (0 bytes)\n');

    // Any age: the second goes too; the current strategy, its steps and its logs never do.
    expect(dcmQuickOk([...db(), '-q', 'db', 'prune', '--older', '0']).stdout).toMatch(/^removed 1 deleted strategy and 1 log folder \(\d+ bytes\)\n$/);
    expect(listed().map((x) => x.id)).toEqual([current.id]);
    expect(folders()).toEqual([current.id]);
    expect(dcmQuickOk([...db(), 'strategy-step', 'list', '-f', 'value', '-c', 'state']).stdout).toBe('complete\ncomplete\n');
  }, 180_000);

  test('bad input: one line, its exit code, nothing changed', async () => {
    f = execFixture();
    const { first } = failDeleteRecreate();
    const before = seen([first.id]);
    const unknown = '20200101000000000000';
    expectRefused(f.dir, [...db(), 'strategy', 'events', '--strategy', unknown], 1, `Strategy ${unknown} not found (strategy list shows the strategies kept)`);
    expectRefused(f.dir, [...db(), 'strategy', 'report', '--strategy', unknown, '--html', path.join(f.dir, 'r.html')], 1, `Strategy ${unknown} not found (strategy list shows the strategies kept)`);
    expect(fs.existsSync(path.join(f.dir, 'r.html'))).toBe(false);
    expectRefused(f.dir, [...db(), 'strategy', 'events', '--strategy', '../x'], 2, "invalid strategy id '../x': give the id strategy list shows (20 digits), or its created_at");
    expectRefused(f.dir, [...db(), 'db', 'prune', '--older', '7'], 2, 'Invalid --older value: 7. Give a unit: 7h, 7d');
    expectRefused(f.dir, [...db(), 'db', 'prune', '--older', 'soon'], 2, 'Invalid --older value: soon. Use a number and a unit: 12h, 7d, 30m');
    expect(seen([first.id])).toEqual(before);
    if (!isPgUrl(f.db)) {
      // No file: nothing to prune is an error, nothing kept is the empty list; neither makes the file.
      const missing = path.join(f.dir, 'none.db');
      expectRefused(f.dir, ['--db', missing, 'db', 'prune', '--older', '1d'], 1, `${missing} does not exist`);
      expect(dcmQuickOk(['--db', missing, 'strategy', 'list', '-f', 'value', '-c', 'id']).stdout).toBe('<none>\n');
      expectRefused(f.dir, ['--db', missing, 'strategy', 'events', '--strategy', first.id], 1, `Strategy ${first.id} not found (strategy list shows the strategies kept)`);
      expect(fs.existsSync(missing)).toBe(false);
    }
    // A strategy being applied cannot be deleted, exactly as before: nothing is kept, nothing goes.
    if (!isPgUrl(f.db)) {
      await withSql(f.db, (d) => d.prepare("UPDATE strategy SET state = 'applying'").run());
      const mid = seen([first.id]);
      expectRefused(f.dir, [...db(), 'strategy', 'delete'], 1, 'Strategy in state applying cannot be deleted');
      expect(seen([first.id])).toEqual(mid);
      expect(listed()).toHaveLength(2);
    }
  }, 120_000);
});
