/**
 * The wrapper every exec run starts under (launcher.ts), in a module of its own so that the bench
 * can time the same wrapper in a bare spawn loop: the floor of this design.
 */

/**
 * `bash -c WRAPPER dcm-run BASE FILE ARGS…`. Only the command's stderr goes through the process
 * substitution (stdout goes straight to the log), and the wrapper waits for the command alone: a
 * background process that keeps stderr open does not hold the run's end back (dcm cleans it up).
 * It starts under umask 077 (the launcher's), so the files it creates (`.run`, `.err`,
 * `.status`) are private, as the log is; the command gets the umask dcm was given (`$2`).
 *
 * Its first act takes the run: it creates `.run` exclusively, or exits (75) without running the
 * command when a later dcm has already taken it for nobody. A dcm that lost this launcher while
 * it was starting a run cannot see a child between fork and exec (it carries the launcher's
 * environment, not the run's DCM_RUN_ID); taking `.run` first makes "never started" a decision
 * that child can no longer overturn.
 */
export const WRAPPER =
  'b=$1; u=$2; shift 2; { set -C; printf "%s\\n" "$DCM_RUN_ID" > "$b.run"; } 2>/dev/null || exit 75; set +C; umask "$u"; ' +
  'exec 3>&1; "$@" 2> >(umask 077; exec tee -a -- "$b.err" >&3) 3>&-; c=$?; umask 077; printf "%s %s\\n" "$c" "$DCM_RUN_ID" > "$b.status"; exit "$c"';
