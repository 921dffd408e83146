/**
 * Issue 49, item 1: stopping a run stops every process it started, not only its process group.
 * ansible-core 2.18 and later starts each of its workers in a session of its own, so a signal to
 * the run's group leaves them going (dcmanager met it: LP 2157935). Debian 12's ansible-core (2.14)
 * keeps its workers in its group; the playbook here makes the same shape itself: its task starts a
 * process in a session of its own (`setsid`) beside the one it waits for. Every process of the run
 * carries DCM_RUN_ID and the test's marker; after an abort now, a timeout and a kill -9 of dcm
 * (the launcher's backstop at the timeout), none is left.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, waitFor } from '../helpers/cli.js';
import { history, killLeftovers, spawnDcm, steps, strategyState } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { dcmQuickOk } from '../helpers/quick.js';

// CI installs ansible-core (.ci/run); a machine without it must say so, not pass in silence.
if (spawnSync('sh', ['-c', 'command -v ansible-playbook']).status !== 0) {
  throw new Error('ansible-playbook is not installed: apt-get install -y ansible-core (as .ci/run does)');
}

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

/** The processes of the play's task (both sleeps: the one waited for, and the one in its own session). */
const sleeps = () =>
  f.leftovers().filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep\u00003141');
    } catch {
      return false;
    }
  });

/** Whether one of the sleeps is in a session of its own (not the run's group's). */
function oneInItsOwnSession(): boolean {
  const sessions = new Set(sleeps().map((pid) => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[3]));
  return sessions.size === 2;
}

function hangingPlaybook(timeout: string): void {
  f = execFixture();
  fs.writeFileSync(path.join(f.dir, 'inventory'), 's1\n');
  fs.writeFileSync(path.join(f.dir, 'hang.yml'), `
- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: a worker of its own session, and a wait that never ends
      ansible.builtin.shell: "setsid sleep 3141 & sleep 3141"
`);
  dcmQuickOk(['--db', f.db, 'subcloud', 'add', 's1']);
  const cfg = f.config(`
defaults:
  timeout: ${timeout}
  kill_grace: 2s
  env: {ANSIBLE_NOCOLOR: "1", ANSIBLE_LOCALHOST_WARNING: "false"}
states:
  "*": [ansible-playbook, -i, inventory, -l, "{cloud}", hang.yml]
`);
  dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--driver', 'exec', '--exec-config', cfg]);
}

describe('a real ansible-playbook run is stopped whole', () => {
  test('abort --now: no process of the run is left', async () => {
    hangingPlaybook('2h');
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => sleeps().length === 2, 60_000, 100);
    expect(oneInItsOwnSession()).toBe(true);
    expect(dcm(['--db', f.db, 'strategy', 'abort', '--now', '--reason', 'hung']).code).toBe(0);
    expect((await apply.done).code).toBe(3);
    expect(steps(f.db)[0].details).toMatch(/^pre check: stopped by abort --now \(\S+: hung\)$/);
    expect(f.leftovers()).toEqual([]);
  }, 90_000);

  test('timeout: the step fails timed out, and no process of the run is left', async () => {
    hangingPlaybook('8s');
    const r = dcm(['--db', f.db, 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(1);
    expect(steps(f.db)[0].details).toBe('pre check: timed out after 8s');
    expect(f.leftovers()).toEqual([]);
  }, 90_000);

  test('kill -9 of dcm: the launcher stops the whole run at its timeout, no process of it is left', async () => {
    hangingPlaybook('6s');
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => sleeps().length === 2, 60_000, 100);
    expect(oneInItsOwnSession()).toBe(true);
    apply.child.kill('SIGKILL');
    await apply.done;
    // The run outlives dcm (SPEC §7.2) until its timeout, its grace and the launcher's backstop.
    await waitFor(() => f.leftovers().length === 0, 60_000, 200);
    expect(strategyState(f.db)).toBe('applying');
    expect(history(f.db).map((h) => h.outcome)).toEqual(['running']);
    // The next apply takes the run as ended by a signal, and runs it again (attempt 2), which the
    // abort now then stops whole too.
    const again = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    await waitFor(() => sleeps().length === 2, 60_000, 100);
    expect(dcm(['--db', f.db, 'strategy', 'abort', '--now']).code).toBe(0);
    expect((await again.done).code).toBe(3);
    expect(f.leftovers()).toEqual([]);
  }, 120_000);
});
