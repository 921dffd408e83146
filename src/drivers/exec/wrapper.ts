/**
 * The wrapper every exec run starts under (launcher.ts), in a module of its own so that the bench
 * can time the same wrapper in a bare spawn loop: the floor of this design. Two of them do the same
 * thing: native/dcm-run, a small C program built at install (one process beside the command),
 * and, where it was not built, the sh script below (two: the shell and a `tee`).
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * native/dcm-run (native/dcm-run.c, which says what it does), when the install built it; the same
 * folder depth from src/ and from dist/. `DCM_RUN_WRAPPER=sh` in dcm's environment chooses the sh
 * wrapper all the same (the tests of the fallback, the bench's comparison); dcm tells its launcher
 * (`--sh`), whose environment has none of dcm's own DCM_* settings.
 */
const NATIVE = fileURLToPath(new URL('../../../native/dcm-run', import.meta.url));
export const NATIVE_WRAPPER: string | null = process.env.DCM_RUN_WRAPPER !== 'sh' && isExecutable(NATIVE) ? NATIVE : null;

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The program and arguments that run `file args…` as the run whose files start with `base`, under
 * `native` (NATIVE_WRAPPER, as dcm chose it), else the sh wrapper.
 */
export function wrapped(native: string | null, base: string, umask: string, file: string, args: readonly string[]): [string, string[]] {
  if (native) return [native, [base, umask, file, ...args]];
  return [WRAPPER_SHELL, ['-c', WRAPPER, 'dcm-run', base, umask, file, ...args]];
}

/**
 * The shell it runs in: dash where there is one (Debian's and Ubuntu's /bin/sh), else /bin/sh. A
 * POSIX shell, not bash: bash costs about twice what dash does to start (issue 31, BENCHMARKS.md),
 * and the wrapper needs nothing of bash's.
 */
export const WRAPPER_SHELL = fs.existsSync('/bin/dash') ? '/bin/dash' : '/bin/sh';

/**
 * `sh -c WRAPPER dcm-run BASE UMASK FILE ARGS…`. It starts under umask 077 (the launcher's), so the
 * files it creates (`.run`, `.err`, `.status`) are private, as the log is; the command gets the
 * umask dcm was given (`$2`).
 *
 * Its first act takes the run: it creates `.run` exclusively, or exits (75) without running the
 * command when a later dcm has already taken it for nobody. A dcm that lost this launcher while
 * it was starting a run cannot see a child between fork and exec (it carries the launcher's
 * environment, not the run's DCM_RUN_ID); taking `.run` first makes "never started" a decision
 * that child can no longer overturn.
 *
 * Only the command's stderr goes through the `tee` (stdout goes straight to the log), and the
 * wrapper waits for the command alone: a background process that keeps stderr open does not hold
 * the run's end back (dcm cleans it up). POSIX sh has no `>(…)`, so the pipe is made without a
 * process: an empty here-document is a pipe in dash (and in bash from 5.1), whose read end, opened
 * again for writing through /proc, gives the write end. Where it is not a pipe (an older shell
 * writes a temporary file), stderr goes to the log alone: the failure's reason is then the log's
 * last line, and the run is not lost for it.
 *
 * The status (`.status`) is written as the wrapper's last act, and the wrapper exits with the
 * command's code: a launcher that sees it exit normally knows the code without reading the file.
 */
export const WRAPPER =
  'b=$1; u=$2; shift 2; { set -C; printf "%s\\n" "$DCM_RUN_ID" > "$b.run"; } 2>/dev/null || exit 75; set +C; ' +
  'exec 4<<E\nE\n' +
  'if [ -p /proc/self/fd/4 ] && exec 5>/proc/self/fd/4; then tee -a -- "$b.err" <&4 4<&- 5>&- & exec 4<&-; else exec 4<&- 5>&1; fi; ' +
  'umask "$u"; "$@" 2>&5 5>&-; c=$?; exec 5>&-; umask 077; printf "%s %s\\n" "$c" "$DCM_RUN_ID" > "$b.status"; exit "$c"';
