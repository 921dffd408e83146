/**
 * Issue 15, break 5: run-log paths no longer collide. Subclouds `a/b` and `a_b`, `..` and `_..`,
 * `.` and `_.`, and custom states `a/b` and `a_b`, all run in one real apply of the exec driver:
 * each run is started (none "given up by a later dcm"), each log holds its own run's output, and
 * `strategy-step logs` prints each subcloud's own.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm} from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { history, steps } from '../helpers/history.js';
import { strategyId } from '../helpers/logs.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => f?.cleanup());

const PAIRS = ['a/b', 'a_b', '..', '_..', '.', '_.', '%2F', 'x'];

/** Every path under `dir`, relative to it. */
function tree(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? [e.name, ...tree(p).map((n) => `${e.name}/${n}`)] : [e.name];
  });
}

describe('run logs of names that used to collide', () => {
  test('subclouds and custom states each get their own log; logs prints each its own', async () => {
    f = execFixture();
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...PAIRS]);
    // Each run says who and what it is.
    const cfg = f.config(`
states:
  a/b: [sh, -c, 'echo "run of $DCM_CLOUD in $DCM_STATE"']
  a_b: [sh, -c, 'echo "run of $DCM_CLOUD in $DCM_STATE"']
`);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'custom', '--max-parallel-subclouds', '8', '--driver', 'exec', '--exec-config', cfg]);
    const r = dcm(['--db', f.db, 'strategy', 'apply', '-q'], { env: f.env });
    expect(steps(f.db).filter((s) => s.state !== 'complete')).toEqual([]);
    expect(r.code).toBe(0);
    expect(history(f.db).map((h) => h.outcome)).toEqual(Array(PAIRS.length * 2).fill('ok'));

    const logDir = `${f.db}.logs`;
    const logs = tree(logDir).filter((n) => n.endsWith('.log'));
    expect(logs).toHaveLength(PAIRS.length * 2);
    // Nothing outside the strategy's folder of subclouds: no `..` climbed out, nothing hidden.
    expect(tree(logDir).filter((n) => n.split('/').some((part) => part.startsWith('.')))).toEqual([]);
    expect(fs.readdirSync(f.dir).filter((n) => !['dcm.db', 'dcm.db.logs', 'exec.yaml', 'step.sh'].includes(n))).toEqual([]);
    expect(fs.readdirSync(logDir)).toEqual([await strategyId(f.db)]);

    for (const cloud of PAIRS) {
      const out = dcmQuick(['--db', f.db, 'strategy-step', 'logs', cloud]);
      expect(out.code).toBe(0);
      expect(out.stdout).toBe(`==> attempt 1, a/b <==\nrun of ${cloud} in a/b\n\n==> attempt 1, a_b <==\nrun of ${cloud} in a_b\n`);
      expect(dcmQuick(['--db', f.db, 'strategy-step', 'logs', cloud, '--state', 'a_b']).stdout).toBe(`run of ${cloud} in a_b\n`);
    }
  });
});
