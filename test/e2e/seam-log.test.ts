/**
 * The run log the seam tests judge by (test/helpers/seams.ts `seam.sh`) logs one end per run, the
 * code the run exits with, even when a SIGTERM comes while the run writes its end: the busy-point
 * loop once reported a double run that was one run logged twice (0, then TERM for a timeout's
 * kill that came as it ended). Here the log's lock is held so that the run is caught writing its
 * end, as it was then, and the SIGTERM comes at that moment.
 */
import { afterEach, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import { waitFor } from '../helpers/cli.js';
import { seamFixture, type SeamFixture } from '../helpers/seams.js';

let f: SeamFixture;
const holders: ChildProcess[] = [];
afterEach(() => {
  for (const h of holders.splice(0)) h.kill('SIGKILL');
  f?.cleanup();
});

/** A process holding `file`'s flock until its stdin closes (once it holds it). */
async function holdLock(file: string): Promise<ChildProcess> {
  const h = spawn('flock', [file, 'cat'], { stdio: ['pipe', 'ignore', 'ignore'] });
  holders.push(h);
  await waitFor(() => children(h.pid!, 'cat').length === 1, 10_000, 10);
  return h;
}

/** Children of `pid` whose command line is `name …` (one of its arguments ending in `has`). */
function children(pid: number, name: string, has = ''): number[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        const argv = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
        return ppid === pid && argv[0] === name && argv.some((a) => a.endsWith(has));
      } catch {
        return false;
      }
    })
    .map(Number);
}

test('a SIGTERM that comes as a run logs its end: one line, the code it exits with', async () => {
  f = seamFixture();
  const lockFile = `${f.runs}.lock`;
  fs.writeFileSync(lockFile, '');
  const holder = await holdLock(lockFile);
  const go = path.join(f.dir, 'go');
  const env = { ...process.env, RUNS: f.runs, DCM_CLOUD: 's1', DCM_STATE: 'pre check', DCM_ATTEMPT: '1', GO: go };
  // Its start is logged under the lock: it waits for it. Its body ends once GO exists.
  const run = spawn(f.seam, ['until [ -e "$GO" ]; do sleep 0.01; done; exit 0'], { env, stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => run.once('exit', (code) => resolve(code)));
  await waitFor(() => children(run.pid!, 'flock', '"$RUNS.starts"').length === 1, 10_000, 10);
  holder.stdin!.end();
  await waitFor(() => fs.existsSync(f.starts) && fs.readFileSync(f.starts, 'utf8').includes('s1|pre check|1'), 10_000, 10);
  // The lock held again, the body may end: the run waits for the lock to log its end.
  const again = await holdLock(lockFile);
  fs.writeFileSync(go, '');
  await waitFor(() => children(run.pid!, 'flock', '>> "$RUNS"').length === 1, 10_000, 10);
  // A kill comes now, as a timeout's would as the run ends.
  run.kill('SIGTERM');
  again.stdin!.end();
  expect(await exited).toBe(0);
  expect(f.ended().map((r) => [r.cloud, r.state, r.attempt, r.code])).toEqual([['s1', 'pre check', 1, '0']]);
});
