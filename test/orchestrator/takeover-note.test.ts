/** What apply says when it takes the lock over: why it could, as far as this host can know. */
import { describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { takeoverNote } from '../../src/orchestrator/lock.js';
import { REAL_CLOCK, REAL_PROCS } from '../../src/platform/runtime.js';

const processStart = (pid: number) => REAL_PROCS.startOf(pid);
const on = (host: string) => ({ clock: REAL_CLOCK, procs: REAL_PROCS, host });
import type { LockRow } from '../../src/store/lock.js';

const NOW = 1_800_000_000_000;
const row = (pid: number, host: string, procStart: string | null): LockRow => ({
  pid,
  host,
  started_at: '',
  heartbeat_at: '',
  heartbeat_ms: NOW - 45_500,
  token: 't',
  proc_start: procStart,
});

/** A pid that was a process and is gone. */
function deadPid(): number {
  return Number(spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' }).stdout.trim());
}

describe('takeover note', () => {
  test('another host: the heartbeat age, never "no longer running" (the pid may be alive there)', () => {
    expect(takeoverNote(row(process.pid, 'node-a', 'x'), on('node-b'), NOW)).toBe(
      `took over the apply lock of pid ${process.pid} on node-a (its heartbeat was 45 s old)`,
    );
  });

  test('this host: a gone process is no longer running; a reused pid is another process', () => {
    const gone = deadPid();
    expect(takeoverNote(row(gone, 'here', 'x'), on('here'), NOW)).toBe(`took over the apply lock of pid ${gone} on here (no longer running)`);
    expect(takeoverNote(row(process.pid, 'here', 'boot:1'), on('here'), NOW)).toBe(
      `took over the apply lock of pid ${process.pid} on here (pid ${process.pid} is now another process)`,
    );
    expect(processStart(process.pid)).not.toBe('boot:1');
  });
});
