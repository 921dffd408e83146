/**
 * The reference's site-side guard (docs/reference/postgresql.md, "Several hosts"), taken from the page itself and run as
 * a site would: a run whose claim is older than one the site has seen for the strategy is
 * refused; a later claim, or another strategy's, runs; the site's lock is held while CMD runs.
 * The guide (docs/guide/several-hosts.md) shows the same guard, byte for byte.
 */
import { afterEach, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, tempDir } from '../helpers/cli.js';

let t: ReturnType<typeof tempDir> | null = null;
afterEach(() => {
  t?.cleanup();
  t = null;
});

function guardFromDocs(dir: string): string {
  const page = fs.readFileSync(path.join(ROOT, 'docs', 'reference', 'postgresql.md'), 'utf8');
  const m = /```sh\n(\s*#!\/bin\/sh\n\s*# dcm-guard[\s\S]*?)```/.exec(page);
  expect(m).not.toBeNull();
  const body = m![1].replace(/^ {2}/gm, '').replaceAll('/var/lib/dcm-guard', path.join(dir, 'seen'));
  const file = path.join(dir, 'dcm-guard');
  fs.writeFileSync(file, body, { mode: 0o755 });
  return file;
}

test('the documented guard refuses a stale fence, runs a later one and another strategy\'s, and holds the lock while the command runs', () => {
  t = tempDir('dcm-guard-');
  const guard = guardFromDocs(t.dir);
  expect(fs.readFileSync(guard, 'utf8').split('\n').filter(Boolean).length).toBeLessThanOrEqual(11);
  const run = (fence: string, strategy: string, cmd: string[] = ['true']) =>
    spawnSync(guard, cmd, { env: { PATH: process.env.PATH, DCM_FENCE: fence, DCM_RUN_ID: `${strategy}/s1/pre%20check/1`, DCM_CLOUD: 's1' }, encoding: 'utf8' });
  expect(run('aaa.2', '7').status).toBe(0);
  const stale = run('bbb.1', '7');
  expect([stale.status, stale.stderr]).toEqual([1, 'stale fence bbb.1: claim 2 has reached this site\n']);
  expect(run('ccc.3', '7').status).toBe(0);
  expect(run('ddd.1', '8').status).toBe(0);
  // While a command runs under the guard, the site's lock is held: flock cannot take it.
  const held = run('eee.2', '8', ['sh', '-c', `flock -n ${path.join(t.dir, 'seen', 's1.lock')} true; echo $?`]);
  expect([held.status, held.stdout]).toEqual([0, '1\n']);
});

test('the guide shows the same guard as the reference (docs/guide/several-hosts.md)', () => {
  const guard = (page: string) => {
    const m = /```sh\n(\s*#!\/bin\/sh\n\s*# dcm-guard[\s\S]*?)```/.exec(fs.readFileSync(path.join(ROOT, 'docs', ...page.split('/')), 'utf8'));
    expect([page, m !== null]).toEqual([page, true]);
    // The reference's sits in a list item: its lines are indented as its first one is.
    const indent = /^ */.exec(m![1])![0];
    return m![1].split('\n').map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n');
  };
  expect(guard('guide/several-hosts.md')).toBe(guard('reference/postgresql.md'));
});
