/**
 * The store's password stays in dcm (README "A database on PostgreSQL"): a run's `{db}` and
 * DCM_DB name the server without it, and PGPASSWORD, the store's password when dcm was given it
 * so, is not in a run's environment. Judged by what the runs themselves saw: their argv and their
 * whole environment, written by each run.
 */
import { afterEach, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, dcmOk } from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';

let f: ExecFixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

test('no run sees the database password, in its argv or its environment', () => {
  f = execFixture();
  // The pass's server trusts its user: any password is accepted, and so must be kept out of runs.
  const db = f.db.replace('://dcm_test@', '://dcm_test:url-secret-4711@');
  expect(db).toContain('url-secret-4711');
  const seen = path.join(f.dir, 'seen.txt');
  const yaml = `states:\n  "*": ["/bin/sh", "-c", "printf 'argv %s\\\\n' \\"$*\\" >> \\"$SEEN\\"; env >> \\"$SEEN\\"; cat /proc/$$/cmdline >> \\"$SEEN\\"; echo >> \\"$SEEN\\"", "x", "{db}"]\n`;
  dcmOk(['--db', db, 'subcloud', 'add', 's1', 's2']);
  dcmOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', f.config(yaml)]);
  const r = dcm(['--db', db, 'strategy', 'apply', '-q'], { env: { SEEN: seen, PGPASSWORD: 'env-secret-4712' } });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const text = fs.readFileSync(seen, 'utf8');
  // Every state of both sites ran and wrote what it saw, the address without its password included.
  expect(text.match(/^argv /gm)?.length).toBeGreaterThanOrEqual(2);
  expect(text).toContain(`DCM_DB=${f.db}`);
  expect(text).toContain(`argv ${f.db}`);
  expect(text).not.toContain('url-secret-4711');
  expect(text).not.toContain('env-secret-4712');
});
