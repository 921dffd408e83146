/**
 * Issue 49, item 5: a site taken out mid-rollout stays out. An operator unmanages a site (or it is
 * set offline) while the strategy has a step for it: the orchestrator reads that as it starts the
 * step's next operation, in the commit that opens it, and starts nothing on the site; the step
 * fails at that state saying why, and `strategy retry` later takes it up from there. The command
 * that took it out says on stderr that the site has a step in the strategy. Real processes: the
 * built CLI, the exec driver's runs, whose own log says what ran on each site.
 */
import { afterEach, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, waitFor } from '../helpers/cli.js';
import { killLeftovers, spawnDcm, steps } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

test('unmanaged or offline mid-rollout: no further state is started on it, its step says why, and the command warned', async () => {
  f = execFixture();
  const release = path.join(f.dir, 'release');
  // Every pre check waits for the test's word; the other states run at once. Each run is logged.
  const cfg = f.config(`
states:
  pre check: [sh, -c, 'while [ ! -e ${release} ]; do sleep 0.05; done; exec ${f.step} "$0"', "{cloud}"]
  "*": [${f.step}, "{cloud}"]
`);
  dcmQuickOk(['--db', f.db, 'subcloud', 'add', 's1', 's2', 's3', 's4']);
  dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--max-parallel-subclouds', '3', '--driver', 'exec', '--exec-config', cfg]);
  const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
  await waitFor(() => steps(f.db).filter((s) => s.state === 'pre check').length === 3, 30_000);

  // s1 mid-state: `subcloud unmanage` refuses (a site half-way through a state), update does it.
  const refused = dcm(['--db', f.db, 'subcloud', 'unmanage', 's1']);
  expect(refused.code).toBe(1);
  const unmanaged = dcm(['--db', f.db, 'subcloud', 'update', 's1', '--management', 'unmanaged', '-f', 'value', '-c', 'management']);
  expect([unmanaged.code, unmanaged.stdout]).toEqual([0, 'unmanaged\n']);
  expect(unmanaged.stderr).toBe(
    'warning: s1 (pre check) has a step in the applying patch strategy: while unmanaged, none of its states is started ' +
      '(the step fails at its next state, saying so; a run in flight goes on to its end)\n',
  );
  expect(dcm(['--db', f.db, 'subcloud', 'update', 's2', '--availability', 'offline']).stderr).toMatch(/^warning: s2 \(pre check\) has a step in the applying patch strategy: while offline, /);
  // s4 not started yet: unmanage takes it, and says so.
  const s4 = dcm(['--db', f.db, 'subcloud', 'unmanage', 's4']);
  expect(s4.code).toBe(0);
  expect(s4.stderr).toMatch(/^warning: s4 \(initial\) has a step in the applying patch strategy: while unmanaged, none of its states is started/);
  fs.writeFileSync(release, '');
  const r = await apply.done;
  expect(r.code).toBe(1);

  const byCloud = new Map(steps(f.db).map((s) => [s.cloud, s]));
  expect(byCloud.get('s3')!.state).toBe('complete');
  expect(byCloud.get('s1')).toMatchObject({
    state: 'failed',
    details: 'updating patches: not started: s1 is unmanaged (taken out while the strategy applied); `dcm strategy retry s1` after `dcm subcloud manage s1`',
  });
  expect(byCloud.get('s2')).toMatchObject({
    state: 'failed',
    details: 'updating patches: not started: s2 is offline (taken out while the strategy applied); `dcm strategy retry s2` once it answers again',
  });
  expect(byCloud.get('s4')!.details).toMatch(/^pre check: not started: s4 is unmanaged /);
  // What ran on each site, by the runs' own log: s1 and s2 their pre check only, s4 nothing.
  const ran = (cloud: string) => f.readRuns().filter((x) => x.cloud === cloud).map((x) => x.state);
  expect(ran('s1')).toEqual(['pre check']);
  expect(ran('s2')).toEqual(['pre check']);
  expect(ran('s4')).toEqual([]);
  expect(ran('s3')).toHaveLength(5);

  // Back in: retry takes s1 up at the state it was kept out of, not from its start.
  dcmQuickOk(['--db', f.db, 'subcloud', 'update', 's1', '--management', 'managed']);
  dcmQuickOk(['--db', f.db, 'strategy', 'retry', 's1']);
  // (s2 and s4 are still failed: the strategy ends failed.)
  expect(dcm(['--db', f.db, 'strategy', 'apply'], { env: f.env }).code).toBe(1);
  expect(steps(f.db).find((s) => s.cloud === 's1')!.state).toBe('complete');
  expect(ran('s1')).toEqual(['pre check', 'updating patches', 'creating VIM patch strategy', 'applying VIM patch strategy', 'finishing patch strategy']);
}, 90_000);
