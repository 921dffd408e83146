/** Guarded output streams on real devices and pipes (the e2e tests drive the same through bash). */
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { describe, expect, test } from '@jest/globals';
import { finalExitCode, guardStream } from '../../src/cli/streams.js';
import { waitFor } from '../helpers/cli.js';

describe('guardStream', () => {
  test('a full device: the write fails once, quietly, and later writes are dropped', async () => {
    const out = fs.createWriteStream('/dev/full');
    const g = guardStream(out);
    expect(out.write('hello\n')).toBe(true);
    await waitFor(() => g.closed);
    expect(g.failure).toBe('ENOSPC');
    let called = false;
    expect(out.write('more\n', () => (called = true))).toBe(true);
    await waitFor(() => called);
    expect(guardStream(out)).toBe(g);
    out.destroy();
  });

  test('a pipe whose reader went away is closed, not failed', async () => {
    // A real pipe to `head -c 1`, which reads one byte and exits.
    const head = spawn('head', ['-c', '1'], { stdio: ['pipe', 'ignore', 'ignore'] });
    const g = guardStream(head.stdin!);
    const exited = new Promise((r) => head.on('exit', r));
    head.stdin!.write('x');
    await exited;
    // Keep writing until the kernel reports the reader gone (EPIPE).
    await waitFor(() => {
      head.stdin!.write('x'.repeat(65536));
      return g.closed;
    });
    expect(g.failure).toBeNull();
  });

  test('the exit code: a result lost to a full stdout is a failure, said once', () => {
    let said = '';
    const err = { write: (s: string) => ((said += s), true) } as unknown as NodeJS.WritableStream;
    expect(finalExitCode(0, { closed: true, failure: 'ENOSPC' }, err)).toBe(1);
    expect(said).toBe('error: cannot write the output (ENOSPC)\n');
    expect(finalExitCode(0, { closed: true, failure: null }, err)).toBe(0);
    expect(finalExitCode(3, { closed: true, failure: 'ENOSPC' }, err)).toBe(3);
  });
});
