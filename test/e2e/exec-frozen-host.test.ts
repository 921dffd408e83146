/**
 * A host frozen with its runs (every process of dcm and of the run stopped: a VM paused, SIGSTOP)
 * past a state's timeout, while the site finished the state: on waking, the run's end and dcm's
 * timeout come due at the same moment. The end is heard first (drivers/exec/index.ts: a timer
 * fired well past its due gives the woken wrapper WOKEN_GRACE_MS to write it), so the history says
 * what the site did; found by the simulator (seed 3814250861: a host paused six minutes, its run's
 * ok recorded as a timeout).
 *
 * The "site" is a file the state's command waits for: the test writes it while every process is
 * stopped, as a site finishes its work while the ssh client that asked is frozen; the command sees
 * it within half a second once continued, and dies of a SIGTERM (a Python loop): dcm, woken at the same moment, would have killed it first.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { waitFor } from '../helpers/cli.js';
import { history, killLeftovers, spawnDcm } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

/** The pid recorded with the first run (its driver armed its timeout as it learnt it). */
function runPid(db: string): number | null {
  const raw = new Database(db, { readonly: true });
  try {
    return (raw.prepare('SELECT pid FROM step_history ORDER BY id LIMIT 1').pluck().get() as number | null | undefined) ?? null;
  } finally {
    raw.close();
  }
}

/** A process's state letter (T: stopped). */
function procState(pid: number): string {
  try {
    return /^\d+ \(.*\) (\S)/.exec(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1] ?? '';
  } catch {
    return '';
  }
}

describe('a host frozen with its runs past their timeout', () => {
  test('the run that ended at its site meanwhile is recorded as it ended, not as timed out', async () => {
    f = execFixture();
    const site = path.join(f.dir, 'site-done');
    const waiter = path.join(f.dir, 'wait-for-site.py');
    fs.writeFileSync(waiter, `import os, time\nwhile not os.path.exists(${JSON.stringify(site)}):\n    time.sleep(0.5)\n`);
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', 's1']);
    const cfg = f.config(`
defaults: {timeout: 2s, kill_grace: 3s}
states:
  "pre check": touch ${site}.asked; exec python3 ${waiter}
  "*": "true"
`);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', cfg]);
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply'], f.env);
    // The state's command waits for the site's answer, and dcm has its pid (its timeout is armed then).
    await waitFor(() => fs.existsSync(`${site}.asked`) && runPid(f.db) !== null, 30_000);
    const frozen = [apply.child.pid!, ...f.leftovers()];
    for (const pid of frozen) {
      try {
        process.kill(pid, 'SIGSTOP');
      } catch {
        // A process of the run that ended as it was listed: nothing left to freeze.
      }
    }
    try {
      // Stopped, or nothing left to stop: gone, or a zombie (the state's `touch`, ended, which the
      // shell exec'd into python3 never reaps).
      await waitFor(() => frozen.every((p) => ['T', 'Z', 'X', ''].includes(procState(p))), 10_000);
      // The site finishes while the host is frozen.
      fs.writeFileSync(site, '');
      // Frozen past the state's 2 s timeout (measured, not assumed).
      const t0 = performance.now();
      await waitFor(() => performance.now() - t0 > 4_000, 10_000, 100);
    } finally {
      for (const pid of frozen) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // gone
        }
      }
    }
    const r = await apply.done;
    expect(r.stderr).not.toContain('timed out');
    expect(r.code).toBe(0);
    const pre = history(f.db).filter((h) => h.state === 'pre check');
    expect(pre.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'ok']]);
  }, 60_000);
});
