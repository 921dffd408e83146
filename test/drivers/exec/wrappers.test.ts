/**
 * The two run wrappers (src/drivers/exec/wrapper.ts): native/dcm-run and the sh script it replaces
 * where no compiler was found, run here as the launcher runs them, without dcm, on the same cases.
 * They must leave the same files with the same meaning, since a later dcm reads them whichever
 * wrapper wrote them: the run taken first (`.run`) or not run at all (exit 75), the status last
 * (`CODE RUN_ID`, 128 + the signal of a command a signal ended), stderr in the log and in `.err`,
 * the command under the umask it was given, and no wait for a background process that keeps stderr
 * open.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir, waitFor } from '../../helpers/cli.js';
import { NATIVE_WRAPPER, wrapped } from '../../../src/drivers/exec/wrapper.js';
import { processesWithEnv } from '../../../src/platform/proc.js';

const RUN_ID = 'strat/s1/pre check/1';
let t: ReturnType<typeof tempDir>;
afterEach(async () => {
  // The sh wrapper's `tee` may start, and create `.err`, after the wrapper has exited: the folder
  // is removed once no process of the run is left (it carries the run's DCM_RUN_ID).
  await waitFor(() => !processesWithEnv('DCM_RUN_ID', new Set([RUN_ID])).has(RUN_ID), 10_000);
  t?.cleanup();
});

const WRAPPERS = [
  ['native/dcm-run', NATIVE_WRAPPER],
  ['the sh wrapper', null],
] as const;

/** Runs `file args…` under the wrapper as the launcher does: the run `base`, its stdout and stderr on `base.log`. */
function run(native: string | null, base: string, file: string, args: string[], umask = '0022') {
  const log = fs.openSync(`${base}.log`, 'w', 0o600);
  try {
    const [program, argv] = wrapped(native, base, umask, file, args);
    // Under the launcher's umask (077).
    const r = spawnSync('sh', ['-c', 'umask 077; exec "$@"', 'sh', program, ...argv], { stdio: ['ignore', log, log], env: { ...process.env, DCM_RUN_ID: RUN_ID } });
    return { code: r.status };
  } finally {
    fs.closeSync(log);
  }
}
const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null);
// The sh wrapper's tee may still be copying the last of stderr when the wrapper has exited;
// native/dcm-run copies all of it first.
const copied = (file: string, text: string) => waitFor(() => (read(file) ?? '').includes(text), 10_000);

test('native/dcm-run was built by the install', () => {
  // Without it every run would quietly take the sh wrapper's extra process.
  expect(NATIVE_WRAPPER).toMatch(/native\/dcm-run$/);
});

describe.each(WRAPPERS)('%s', (_name, native) => {
  test('takes the run, keeps stderr apart in the log and in .err, and writes the status last; exits with the code', async () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    const r = run(native, base, 'sh', ['-c', 'echo out; echo err-line >&2; exit 3']);
    expect(r.code).toBe(3);
    if (!native) await copied(`${base}.log`, 'err-line');
    expect(read(`${base}.run`)).toBe('strat/s1/pre check/1\n');
    expect(read(`${base}.status`)).toBe('3 strat/s1/pre check/1\n');
    expect(read(`${base}.err`)).toBe('err-line\n');
    expect(read(`${base}.log`)!.split('\n').sort()).toEqual(['', 'err-line', 'out']);
    // Private, whatever the umask the command was given (the launcher's is 077).
    for (const end of ['.run', '.status', '.err']) expect([end, fs.statSync(base + end).mode & 0o077]).toEqual([end, 0]);
  });

  test('a run already taken (by a later dcm, for nobody) is not run: exit 75, no status', () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    fs.writeFileSync(`${base}.run`, 'abandoned\n');
    const made = path.join(t.dir, 'ran');
    expect(run(native, base, 'touch', [made]).code).toBe(75);
    expect(fs.existsSync(made)).toBe(false);
    expect(read(`${base}.status`)).toBeNull();
    expect(read(`${base}.run`)).toBe('abandoned\n');
  });

  test('a command ended by a signal: 128 + its number, as sh says it', () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    expect(run(native, base, 'sh', ['-c', 'kill -TERM $$']).code).toBe(143);
    expect(read(`${base}.status`)).toBe('143 strat/s1/pre check/1\n');
  });

  test('the command gets the umask it is given, and is found on PATH', () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    const seen = path.join(t.dir, 'umask');
    expect(run(native, base, 'sh', ['-c', `umask > ${seen}`], '0027').code).toBe(0);
    expect(read(seen)).toBe('0027\n');
  });

  test('a command that is not there: exit 127, and the reason on stderr', async () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    expect(run(native, base, 'no-such-command-here', []).code).toBe(127);
    if (!native) await copied(`${base}.err`, 'not found');
    expect(read(`${base}.err`)).toMatch(/no-such-command-here: not found\n$/);
    expect(read(`${base}.status`)).toBe('127 strat/s1/pre check/1\n');
  });

  test('a background process that keeps stderr open does not hold the end back; what came before the end is kept', async () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    const pidFile = path.join(t.dir, 'bg');
    const r = run(native, base, 'sh', ['-c', `sleep 1000 >&2 & echo $! > ${pidFile}; echo last words >&2; exit 5`]);
    try {
      expect(r.code).toBe(5);
      // The wrapper has ended while the background process, stderr still open, goes on.
      expect(() => process.kill(Number(read(pidFile)), 0)).not.toThrow();
      expect(read(`${base}.status`)).toBe('5 strat/s1/pre check/1\n');
      if (!native) await copied(`${base}.log`, 'last words');
      expect(read(`${base}.log`)).toContain('last words\n');
    } finally {
      try {
        process.kill(Number(read(pidFile)), 'SIGKILL');
      } catch {
        // gone
      }
    }
  });
});
