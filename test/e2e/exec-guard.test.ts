/**
 * README "The far side can refuse a duplicate": examples/exec/site-guard.sh, called from a real
 * exec apply, accepts each run once and refuses a stale attempt or a run id seen before.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { dcmOk } from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { dcmQuickOk } from '../helpers/quick.js';

const GUARD = path.resolve('examples/exec/site-guard.sh');
let f: ExecFixture;
afterEach(() => f?.cleanup());

describe('site-guard.sh', () => {
  test('each run of an apply passes once; the same run id again, or an older attempt, is refused', () => {
    f = execFixture();
    const book = path.join(f.dir, 'guard');
    const ids = path.join(f.dir, 'ids');
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', 's1', 's2']);
    const cfg = f.config(`
defaults: {env: {SITE_GUARD_DIR: "${book}"}}
states:
  "*":
    run: ${GUARD} sh -c 'echo "$DCM_RUN_ID $DCM_ATTEMPT" >> "$0"' ${ids}
`);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    dcmOk(['--db', f.db, 'strategy', 'apply'], { env: f.env });
    const seen = fs.readFileSync(ids, 'utf8').trim().split('\n');
    expect(seen).toHaveLength(10);
    expect(new Set(seen).size).toBe(10);
    const [runId, attempt] = seen[0].split(' ');
    const again = (id: string, a: string) =>
      spawnSync('sh', [GUARD, 'true'], { env: { ...process.env, SITE_GUARD_DIR: book, DCM_RUN_ID: id, DCM_ATTEMPT: a }, encoding: 'utf8' });
    const dup = again(runId, attempt);
    expect([dup.status, dup.stderr]).toEqual([75, expect.stringContaining('is stale')]);
    const next = again(runId.replace(/\/1$/, '/2'), '2');
    expect(next.status).toBe(0);
    const older = again(runId, '1');
    expect(older.status).toBe(75);
  });
});
