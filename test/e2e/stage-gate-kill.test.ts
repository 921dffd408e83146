/**
 * kill -9 of apply while a gate check runs (README "Stage gates"): the check, in a process group
 * of its own, outlives the apply. The next apply stops it (found by its DCM_GATE_CHECK tag) before
 * it runs its own: one check of the stage at a time, and the old one never reports.
 */
import { expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { waitFor } from '../helpers/cli.js';
import { spawnDcm, steps, strategyState, tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

/** Running, and not a zombie (nothing reaps an orphan here: DESIGN.md). */
function alive(pid: number): boolean {
  try {
    return !/^[ZX]/.test(fs.readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]);
  } catch {
    return false;
  }
}

test('kill -9 during a check: the next apply stops the old check before it runs its own', async () => {
  const t = temp();
  dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '1']);
  dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'fleet', '--max_parallel_subclouds', '1']);
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'c1', '--group', 'canary']);
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'f1', '--group', 'fleet']);
  const log = path.join(t.dir, 'checks.log');
  const go = path.join(t.dir, 'go');
  // Each check says, as it starts, whether the check before it still runs; then waits for `go`.
  const check = [
    `prev=$(tail -n 1 ${log} 2>/dev/null | cut -d' ' -f2)`,
    `state=$( [ -n "$prev" ] && sed -n 's/^State:[[:space:]]*\\(.\\).*/\\1/p' /proc/$prev/status 2>/dev/null)`,
    `case "$state" in ''|Z|X) echo "start $$" ;; *) echo "start $$ while $prev runs" ;; esac >> ${log}`,
    `while [ ! -e ${go} ]; do sleep 0.05; done`,
    `echo "passed $$" >> ${log}`,
  ].join('; ');
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '10ms..30ms', '--stage-gate', 'check', '--gate-check', check]);
  const first = spawnDcm(['--db', t.db, 'strategy', 'apply']);
  await waitFor(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('start'), 60_000, 20);
  const old = Number(/^start (\d+)/.exec(fs.readFileSync(log, 'utf8'))![1]);
  first.child.kill('SIGKILL');
  await first.done;
  // The apply is gone; its check is not.
  expect(alive(old)).toBe(true);
  expect(strategyState(t.db)).toBe('applying');

  const second = spawnDcm(['--db', t.db, 'strategy', 'apply']);
  await waitFor(() => fs.readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('start')).length === 2, 60_000, 20);
  // Stopped before the new one started: the new check did not see it running.
  expect(fs.readFileSync(log, 'utf8')).toMatch(/^start \d+\nstart \d+\n$/);
  expect(alive(old)).toBe(false);
  fs.writeFileSync(go, '');
  const r = await second.done;
  expect(r.code).toBe(0);
  expect(r.stderr).toContain(`stage 1: stopping the gate check an earlier apply left running (pid ${old}`);
  // Only the new check passed: the old one never got to report.
  const lines = fs.readFileSync(log, 'utf8').trim().split('\n');
  expect(lines).toHaveLength(3);
  expect(lines[2]).toBe(`passed ${/^start (\d+)/.exec(lines[1])![1]}`);
  expect(steps(t.db).map((s) => s.state)).toEqual(['complete', 'complete']);
});
