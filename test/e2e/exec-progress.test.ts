/**
 * Progress from inside a run (issue 19), end to end with bin/dcm.js and real exec runs: a run's
 * last line in `$DCM_PROGRESS` is its step's details while it runs (`strategy-step list`,
 * `strategy status`), the run's result replaces it, the writes are paced (at most one a second
 * per subcloud, counted by DCM_COUNTERS), and a stale progress file never shows as a later run's.
 * Every wait is for an event (a line shown, a file created), never for time to pass.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcmSpawn, waitFor } from '../helpers/cli.js';
import { history, steps } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { withSql } from '../helpers/fleet.js';
import { statesOf } from '../../src/domain/types.js';
import { dcmQuickOk } from '../helpers/quick.js';

const PRESTAGE = statesOf('prestage');
let f: ExecFixture;
afterEach(() => f?.cleanup());

const db = () => ['--db', f.db];
const details = (cloud: string) => steps(f.db).find((s) => s.cloud === cloud)!.details;
const statusProgress = () => (JSON.parse(dcmQuickOk([...db(), 'strategy', 'status', '-f', 'json']).stdout) as { progress: string | null }).progress;
/** A shell line that waits for the file named by $<name> (the test creates it). */
const waitGo = (name: string) => `while [ ! -e "$${name}" ]; do sleep 0.02; done`;

describe('exec driver: $DCM_PROGRESS', () => {
  // Claim, README "Running real updates", what a run sees: DCM_PROGRESS, its last non-empty line the step's details while it runs.
  test('the latest line is the step\'s details while the run goes on, in step list and status; empty once the step completes', async () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const go1 = path.join(f.dir, 'go1');
    const go2 = path.join(f.dir, 'go2');
    const cfg = f.config(`
defaults:
  timeout: 60s
  env: {GO1: "${go1}", GO2: "${go2}"}
states:
  ${PRESTAGE[0]}:
    run: >-
      for p in 20 40 60; do echo "deploy phase is $p% complete" >> "$DCM_PROGRESS"; done; ${waitGo('GO1')};
      printf 'deploy phase is 80%% complete\\n\\ndeploy phase is 100%% complete\\n\\n' >> "$DCM_PROGRESS"; ${waitGo('GO2')}
  "*": "true"
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'prestage', '--driver', 'exec', '--exec-config', cfg]);
    const apply = dcmSpawn([...db(), 'strategy', 'apply'], f.env);
    try {
      await waitFor(() => details('s1') === 'deploy phase is 60% complete', 30_000, 50);
      expect(statusProgress()).toBe('s1: deploy phase is 60% complete');
      fs.writeFileSync(go1, '');
      // The last non-empty line, blank lines after it notwithstanding.
      await waitFor(() => details('s1') === 'deploy phase is 100% complete', 30_000, 50);
      expect(steps(f.db)[0].state).toBe(PRESTAGE[0]);
      fs.writeFileSync(go2, '');
      const r = await apply.done;
      expect([r.code, r.stderr]).toEqual([0, expect.stringContaining('strategy complete')]);
    } finally {
      fs.writeFileSync(go1, '');
      fs.writeFileSync(go2, '');
      await apply.done;
    }
    expect(steps(f.db).map((s) => [s.state, s.details])).toEqual([['complete', '']]);
    expect(history(f.db, 's1').map((h) => h.details)).toEqual(PRESTAGE.map(() => ''));
    expect(statusProgress()).toBeNull();
  });

  // Claim, README "Running real updates", what a run sees: details written only when they change, at most once a second per subcloud.
  test('1,000 lines written at once are a few writes, at most one per second of the run; a run that writes none costs none', async () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', 's2']);
    const go = path.join(f.dir, 'go');
    const cfg = f.config(`
defaults:
  timeout: 60s
  env: {GO: "${go}"}
states:
  ${PRESTAGE[0]}:
    run: >-
      [ "$DCM_CLOUD" = s2 ] && exit 0;
      i=0; while [ $i -lt 1000 ]; do i=$((i+1)); echo "apply phase is $i/1000" >> "$DCM_PROGRESS"; done; ${waitGo('GO')}
  "*": "true"
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'prestage', '--driver', 'exec', '--exec-config', cfg, '--max-parallel-subclouds', '2']);
    const counters = path.join(f.dir, 'counters.json');
    const apply = dcmSpawn([...db(), 'strategy', 'apply'], { ...f.env, DCM_TEST_HOOKS: '1', DCM_COUNTERS: counters });
    try {
      await waitFor(() => details('s1') === 'apply phase is 1000/1000', 30_000, 50);
    } finally {
      fs.writeFileSync(go, '');
    }
    expect((await apply.done).code).toBe(0);
    const c = JSON.parse(fs.readFileSync(counters, 'utf8')) as { details: number };
    // Only s1's first run wrote progress; the 1,000th line was written, so at least once, and the
    // 1,000 lines were never a write each. The pace itself (once a second) is pinned on a test
    // clock in test/orchestrator/run-details.test.ts, not on this machine's wall clock.
    expect(c.details).toBeGreaterThanOrEqual(1);
    expect(c.details).toBeLessThan(1000);
    expect(steps(f.db).map((s) => s.details)).toEqual(['', '']);
  });

  // Claim, README "Running real updates", what a run sees: a progress file left by an earlier strategy, or an earlier attempt's, never shows as a later run's.
  test('a progress file left at the same path by an earlier strategy, and an earlier attempt\'s, never become a later run\'s details', async () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1', 's2']);
    const logs = path.join(f.dir, 'runlogs');
    // An earlier strategy's run of s1 left its progress file where s1's first run writes its own.
    fs.mkdirSync(path.join(logs, 's1'), { recursive: true });
    fs.writeFileSync(path.join(logs, 's1', `1-${PRESTAGE[0]}.progress`), 'earlier strategy: 90% complete\n');
    const go = Object.fromEntries(['GO', 'GO2', 'GO3', 'GO4'].map((n) => [n, path.join(f.dir, n.toLowerCase())]));
    const cfg = f.config(`
defaults:
  timeout: 60s
  retries: 1
  backoff: 0s
  env: ${JSON.stringify(go)}
states:
  ${PRESTAGE[0]}:
    run: >-
      if [ "$DCM_CLOUD" = s2 ]; then echo "s2 at 10%" >> "$DCM_PROGRESS"; ${waitGo('GO')}; exit 0; fi;
      if [ "$DCM_ATTEMPT" = 1 ]; then ${waitGo('GO')}; echo "s1 attempt 1 at 50%" >> "$DCM_PROGRESS"; ${waitGo('GO2')};
      echo "s1 attempt 1 at 99%" >> "$DCM_PROGRESS"; exit 1; fi;
      echo "s1 attempt 2 at 0%" >> "$DCM_PROGRESS"; ${waitGo('GO3')}
  ${PRESTAGE[1]}:
    run: '[ "$DCM_CLOUD" = s2 ] || ${waitGo('GO4')}'
  "*": "true"
`);
    dcmQuickOk([...db(), 'strategy', 'create', '--type', 'prestage', '--driver', 'exec', '--exec-config', cfg, '--log-dir', logs, '--max-parallel-subclouds', '2']);
    // Strategies share a path only in layout 1 (each strategy created now has a folder of its
    // own): this one is as an earlier dcm stored it, with no layout version.
    await withSql(f.db, (d) => d.prepare("UPDATE strategy SET extra_args = json_remove(extra_args, '$.log_layout')").run());
    const apply = dcmSpawn([...db(), 'strategy', 'apply'], f.env);
    const release = () => Object.values(go).forEach((g) => fs.writeFileSync(g, ''));
    try {
      // s1's run started first (same commit, in order): its file was looked at no later than s2's,
      // whose line now shows. The earlier strategy's line was removed before the run, not shown.
      await waitFor(() => details('s2') === 's2 at 10%', 30_000, 50);
      expect(details('s1')).toBe('');
      fs.writeFileSync(go.GO, '');
      await waitFor(() => details('s1') === 's1 attempt 1 at 50%', 30_000, 50);
      fs.writeFileSync(go.GO2, '');
      // Attempt 1 failed with "99%" its file's last line: attempt 2 shows its own file's line.
      await waitFor(() => details('s1') === 's1 attempt 2 at 0%', 30_000, 50);
      expect(history(f.db, 's1').map((x) => [x.attempt, x.outcome])).toEqual([[1, 'failed'], [2, 'running']]);
      fs.writeFileSync(go.GO3, '');
      // The next state runs: its details are its own (none yet), not the last attempt's line.
      await waitFor(() => history(f.db, 's1').some((x) => x.state === PRESTAGE[1] && x.outcome === 'running'), 30_000, 50);
      expect(details('s1')).toBe('');
      fs.writeFileSync(go.GO4, '');
      expect((await apply.done).code).toBe(0);
    } finally {
      release();
      await apply.done;
    }
    expect(fs.readFileSync(path.join(logs, 's1', `1-${PRESTAGE[0]}.progress`), 'utf8')).not.toContain('earlier');
    expect(history(f.db, 's1').find((x) => x.attempt === 1)!.details).toBe('exit 1');
    expect(steps(f.db).map((s) => [s.cloud, s.state, s.details])).toEqual([['s1', 'complete', ''], ['s2', 'complete', '']]);
  });
});
