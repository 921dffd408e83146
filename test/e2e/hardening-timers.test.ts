/**
 * Issue 15, break 4: durations past Node's timer limit (2^31-1 ms, about 24.8 days) are waited
 * for, not fired after 1 ms. Real applies of the exec driver: `timeout: 720h` lets a run finish;
 * `backoff: 600h` does not run the next attempt while another subcloud's run goes on and ends;
 * `--progress-interval 600h` prints no summary line in a short apply.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { dcm, waitFor } from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { killLeftovers, spawnDcm, steps } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

describe('long durations', () => {
  test('timeout: 720h lets a run finish', () => {
    f = execFixture();
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', 's1']);
    const cfg = f.config(`
defaults: {timeout: 720h, env: {STEP_MIN_MS: "300"}}
states:
  "*": [${f.step}]
`);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'firmware', '--driver', 'exec', '--exec-config', cfg]);
    const r = dcm(['--db', f.db, 'strategy', 'apply', '-q'], { env: f.env });
    expect(steps(f.db).map((s) => [s.state, s.details])).toEqual([['complete', '']]);
    expect(r.code).toBe(0);
    expect(f.readRuns()).toHaveLength(4);
  });

  test('backoff: 600h: no second attempt while another subcloud runs to its end', async () => {
    f = execFixture();
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', 'fails', 'slow']);
    // `fails` fails its first run; `slow` takes a second. With the backoff cut to 1 ms, `fails`
    // would run again long before `slow` ends.
    const cfg = f.config(`
defaults: {retries: 1, backoff: 600h}
states:
  importing firmware:
    run: 'if [ "$DCM_CLOUD" = slow ]; then STEP_MIN_MS=1000 ${f.step}; else STEP_EXIT=$([ "$DCM_ATTEMPT" = 1 ] && echo 1 || echo 0) ${f.step}; fi'
  "*": [${f.step}]
`);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'firmware', '--max-parallel-subclouds', '2', '--driver', 'exec', '--exec-config', cfg]);
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply', '-v'], f.env);
    await waitFor(() => steps(f.db).find((s) => s.cloud === 'slow')?.state === 'complete', 60_000, 20);
    const runs = f.readRuns().filter((r) => r.cloud === 'fails');
    expect(runs.map((r) => r.attempt)).toEqual([1]);
    expect(apply.stderr()).toContain('fails: importing firmware: exit 1 (run again in 600h)');
    // Twice: the first Ctrl-C waits for what is in flight (the retry would be), the second stops.
    apply.child.kill('SIGINT');
    await waitFor(() => apply.stderr().includes('again to stop waiting'), 10_000, 10);
    apply.child.kill('SIGINT');
    // How it ended, with its signal and its last words: a failure here must say what happened.
    const end = await apply.done;
    expect({ code: end.code, signal: end.signal, tail: end.code === 130 ? '' : end.stderr.slice(-2000) }).toEqual({ code: 130, signal: null, tail: '' });
    expect(f.readRuns().filter((r) => r.cloud === 'fails')).toHaveLength(1);
  });

  test('--progress-interval 600h: no summary line in an apply of a few hundred ms', () => {
    f = execFixture();
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', 's1']);
    const cfg = f.config(`
defaults: {env: {STEP_MIN_MS: "100"}}
states:
  "*": [${f.step}]
`);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'firmware', '--driver', 'exec', '--exec-config', cfg]);
    const r = dcm(['--db', f.db, 'strategy', 'apply', '--progress-interval', '600h'], { env: f.env });
    expect(r.code).toBe(0);
    expect(r.stderr.split('\n').filter((l) => / progress: /.test(l))).toEqual([]);
    expect(r.stderr).toContain('strategy complete');
  });
});
