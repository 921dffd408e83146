/**
 * The two run wrappers (src/drivers/exec/wrapper.ts): native/dcm-run and the sh script it replaces
 * where no compiler was found, run here as the launcher runs them, without dcm, on the same cases.
 * They must leave the same files with the same meaning, since a later dcm reads them whichever
 * wrapper wrote them: the run taken first (`.run`) or not run at all (exit 75), the status last
 * (`CODE RUN_ID`, 128 + the signal of a command a signal ended), stderr in the log and in `.err`,
 * the command under the umask it was given, and no wait for a background process that keeps stderr
 * open. native/dcm-run also says `alone` after them when nothing of the run was left (it is the
 * run's subreaper), which spares dcm a look for leftovers; the sh wrapper never says it, and is
 * looked after as before.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
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
  /** What the status says after the run id when nothing of the run was left: only dcm-run says it. */
  const alone = native ? ' alone' : '';

  test('takes the run, keeps stderr apart in the log and in .err, and writes the status last; exits with the code', async () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    const r = run(native, base, 'sh', ['-c', 'echo out; echo err-line >&2; exit 3']);
    expect(r.code).toBe(3);
    if (!native) await copied(`${base}.log`, 'err-line');
    expect(read(`${base}.run`)).toBe('strat/s1/pre check/1\n');
    expect(read(`${base}.status`)).toBe(`3 strat/s1/pre check/1${alone}\n`);
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
    expect(read(`${base}.status`)).toBe(`143 strat/s1/pre check/1${alone}\n`);
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
    expect(read(`${base}.status`)).toBe(`127 strat/s1/pre check/1${alone}\n`);
  });

  test('a background process that keeps stderr open does not hold the end back; what came before the end is kept', async () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    const pidFile = path.join(t.dir, 'bg');
    const r = run(native, base, 'sh', ['-c', `sleep 1000 >&2 & echo $! > ${pidFile}; echo last words >&2; exit 5`]);
    try {
      expect(r.code).toBe(5);
      // The wrapper has ended while the background process, stderr still open, goes on: so the
      // status does not say the run was left alone.
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

/** Each live process carrying the run's tag, killed (what a test left going). */
function killTagged(): void {
  for (const pid of processesWithEnv('DCM_RUN_ID', new Set([RUN_ID])).get(RUN_ID) ?? []) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** The one-letter state of a process (`Z`: ended, not reaped), or null once it is gone. */
function procState(pid: number): string | null {
  const stat = read(`/proc/${pid}/stat`);
  return stat === null ? null : stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

describe('native/dcm-run, the run\'s subreaper', () => {
  test('a process left out of the run\'s session (a double fork and setsid) keeps `alone` off the status', () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    const pidFile = path.join(t.dir, 'left');
    try {
      // The subshell ends at once: its setsid'd sleep, orphaned, is made dcm-run's child.
      const r = run(NATIVE_WRAPPER, base, 'sh', ['-c', `(setsid sh -c 'echo $$ > ${pidFile}; exec sleep 1000' >/dev/null 2>&1 &); while [ ! -s ${pidFile} ]; do sleep 0.01; done`]);
      expect(r.code).toBe(0);
      expect(() => process.kill(Number(read(pidFile)), 0)).not.toThrow();
      expect(read(`${base}.status`)).toBe('0 strat/s1/pre check/1\n');
    } finally {
      killTagged();
    }
  });

  test('what the command leaves behind and ends while the run goes on is reaped as it ends, not left a zombie; then the run ends alone', async () => {
    t = tempDir('dcm-wrapper-');
    const base = path.join(t.dir, '1-pre-check');
    const pidFile = path.join(t.dir, 'left');
    const go = path.join(t.dir, 'go');
    const log = fs.openSync(`${base}.log`, 'w', 0o600);
    // An inner shell leaves a short sleep behind and ends; the command waits for the test's word.
    const [program, argv] = wrapped(NATIVE_WRAPPER, base, '0022', 'sh', ['-c', `sh -c 'sleep 0.2 & echo $! > ${pidFile}'; while [ ! -e ${go} ]; do sleep 0.02; done`]);
    const child = spawn(program, argv, { stdio: ['ignore', log, log], env: { ...process.env, DCM_RUN_ID: RUN_ID } });
    fs.closeSync(log);
    const ended = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(() => (read(pidFile) ?? '').endsWith('\n'), 10_000);
      const left = Number(read(pidFile));
      // Reaped by dcm-run as it ends: gone from /proc, never a zombie kept while the run goes on.
      await waitFor(() => procState(left) === null, 10_000);
      expect(read(`${base}.status`)).toBeNull();
      fs.writeFileSync(go, '');
      expect(await ended).toBe(0);
      expect(read(`${base}.status`)).toBe('0 strat/s1/pre check/1 alone\n');
    } finally {
      killTagged();
    }
  });
});
