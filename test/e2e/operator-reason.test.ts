/**
 * Issue 34, item 3: the operator's words. `--reason TEXT` on pause, resume, update, abort, retry
 * and `subcloud-group update` during a strategy is kept with the event it explains: `strategy
 * events` has it (its `reason` column), `strategy status` names the last action with it, and the
 * report's event table and marks carry it. A bad reason is a usage error that writes nothing.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { waitFor } from '../helpers/cli.js';
import { spawnDcm, steps, tempPerTest } from '../helpers/history.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

describe('--reason', () => {
  test('pause, update, group update, resume, abort, retry: each reason in the record, the status and the report', async () => {
    const t = temp();
    const db = ['--db', t.db];
    const as = (user: string) => ({ env: { USER: user, DCM_HOST: 'ops1' } });
    // Enough subclouds that some are still initial when the abort comes, however slow the machine.
    dcmQuickOk([...db, 'subcloud', 'add', 's1', 's2', 's3', 's4', 's5', 's6', 's7', 's8', 's9', 's10']);
    dcmQuickOk([...db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1', '--sim-latency', '300ms']);
    const apply = spawnDcm([...db, '-q', 'strategy', 'apply']);
    // A step under way, so that the stage has begun and the report draws the operators' marks on it.
    await waitFor(() => steps(t.db).some((s) => s.state !== 'initial'), 30_000, 20);

    dcmQuickOk([...db, 'strategy', 'pause', '--reason', 'alarm 750.002 on s1: looking'], as('alice'));
    const status = JSON.parse(dcmQuickOk([...db, 'strategy', 'status', '-f', 'json']).stdout) as Record<string, unknown>;
    expect(status['last action']).toMatch(/^paused by alice@ops1 at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}: alarm 750\.002 on s1: looking$/);
    dcmQuickOk([...db, 'strategy', 'update', '--max-parallel-subclouds', '2', '--reason', 'canary clean'], as('bob'));
    dcmQuickOk([...db, 'subcloud-group', 'update', 'Default', '--max_parallel_subclouds', '4', '--reason', 'for the next patch'], as('bob'));
    dcmQuickOk([...db, 'strategy', 'resume', '--reason', 'alarm cleared'], as('alice'));
    dcmQuickOk([...db, 'strategy', 'abort', '--reason', 'change window closing'], as('carol'));
    expect((await apply.done).code).toBe(3);
    dcmQuickOk([...db, 'strategy', 'retry', '--reason', 'next window'], as('carol'));

    const rows = JSON.parse(dcmQuickOk([...db, 'strategy', 'events', '-f', 'json']).stdout) as Record<string, unknown>[];
    const said = rows.filter((r) => r.reason !== null).map((r) => [r.event, r.user, r.reason]);
    expect(said).toEqual([
      ['paused', 'alice', 'alarm 750.002 on s1: looking'],
      ['updated', 'bob', 'canary clean'],
      ['group updated', 'bob', 'for the next patch'],
      ['resumed', 'alice', 'alarm cleared'],
      ['abort requested', 'carol', 'change window closing'],
      ['retried', 'carol', 'next window'],
    ]);
    expect(rows.find((r) => r.event === 'group updated')!.details).toBe('group Default: max parallel subclouds: 2 -> 4');
    // Events no operator made have no reason.
    expect(rows.find((r) => r.event === 'apply started')!.reason).toBeNull();
    expect((JSON.parse(dcmQuickOk([...db, 'strategy', 'status', '-f', 'json']).stdout) as Record<string, unknown>)['last action'])
      .toMatch(/^retried by carol@ops1 at .*: next window$/);

    const html = path.join(t.dir, 'r.html');
    dcmQuickOk([...db, 'strategy', 'report', '--html', html]);
    const page = fs.readFileSync(html, 'utf8');
    expect(page).toContain('<td class="reason">alarm 750.002 on s1: looking</td>');
    expect(page).toContain('(reason: change window closing)');
  }, 90_000);

  test('a bad reason: exit 2, one line, nothing recorded', () => {
    const t = temp();
    const db = ['--db', t.db];
    dcmQuickOk([...db, 'subcloud', 'add', 's1']);
    dcmQuickOk([...db, 'strategy', 'create', '--type', 'patch']);
    for (const [args, message] of [
      [['strategy', 'pause', '--reason', ' '], "error: option '--reason' is empty: say why\n"],
      [['strategy', 'abort', '--reason', 'two\nlines'], "error: option '--reason' holds a control character (a newline, a tab, an escape): give one line of text\n"],
      [['strategy', 'update', '--max-parallel-subclouds', '3', '--reason', 'x'.repeat(501)], "error: option '--reason' is 501 characters long: at most 500\n"],
    ] as [string[], string][]) {
      const r = dcmQuick([...db, ...args]);
      expect([r.code, r.stderr]).toEqual([2, message]);
    }
    expect(dcmQuickOk([...db, 'strategy', 'events', '-f', 'value', '-c', 'event']).stdout).toBe('<none>\n');
    // No strategy: a group's update records nothing, and says nothing of it.
    dcmQuickOk([...db, 'strategy', 'delete']);
    expect(dcmQuickOk([...db, 'subcloud-group', 'update', 'Default', '--description', 'd', '--reason', 'tidy']).stderr).toBe('');
  });
});
