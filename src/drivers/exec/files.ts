/**
 * Where a run leaves its traces: `<attempt>-<state>.log` in its subcloud's folder of the
 * strategy's log layout (domain/logs.ts) for its output, and beside it
 * `.pid` (written by the wrapper as its first act), `.status` (its exit status, written by the
 * wrapper as its last act) and `.next` (the run's `$DCM_NEXT`). A later apply reads these to learn
 * how a run ended while dcm was down.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PRIVATE_DIR, PRIVATE_FILE } from '../../platform/private.js';

/** One module owns the layout: the logs command finds runs by the same names. */
export { runBase } from '../../domain/logs.js';

export function readSmall(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

export function removeQuietly(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    // not there: nothing to remove
  }
}

/**
 * The `.status` file, written by the run's wrapper as its last act: `<code> <run id>`
 * (`signal <NAME>` from an older dcm's launcher: cut off, not finished); null while there is none.
 * A status naming another run id is a stale file of an earlier strategy that used the same
 * folder, never this run's: it counts as none. `<code> <run id> alone`: native/dcm-run, the run's
 * subreaper, had no child left when the command ended, so nothing of the run lives (`alone`).
 */
export type RunStatus = { code: number; alone?: true } | { signal: string };

export function readStatus(base: string, runId: string): RunStatus | null {
  const text = readSmall(`${base}.status`);
  if (text === null) return null;
  const [first, second, third] = text.trim().split(/\s+/);
  if (/^\d+$/.test(first ?? '')) {
    if (second !== undefined && second !== runId) return null;
    return third === 'alone' ? { code: Number(first), alone: true } : { code: Number(first) };
  }
  if (first === 'signal' && second) return { signal: second };
  return null; // being written: only an instant
}

/** When the run's wrapper wrote its exit status (the run's end), epoch ms; null without one. */
export function statusTimeMs(base: string): number | null {
  try {
    return fs.statSync(`${base}.status`).mtimeMs;
  } catch {
    return null;
  }
}

/**
 * The `.pid` file, created exclusively by whoever claims the run first: the launcher, which writes
 * `launching <launcher pid>` and then `<pid> <launcher pid>`, or a later dcm that finds neither a
 * recorded pid nor this file and writes `abandoned`, so that a launch message still on its way
 * can never start the run after all.
 */
export type RunClaim = { launching: number } | { pid: number; launcher: number } | { abandoned: true } | { stale: true };

/** Each form ends with the run id it is for; one naming another run is `stale` (an earlier strategy's). */
export function readClaim(base: string, runId: string): RunClaim | null {
  const text = readSmall(`${base}.pid`);
  if (text === null) return null;
  const t = text.trim().split(/\s+/);
  const idAt = t[0] === 'abandoned' ? 1 : 2;
  if (t[idAt] !== undefined && t[idAt] !== runId) return { stale: true };
  if (t[0] === 'abandoned') return { abandoned: true };
  if (t[0] === 'launching' && Number(t[1]) > 0) return { launching: Number(t[1]) };
  if (Number(t[0]) > 0 && Number(t[1]) > 0) return { pid: Number(t[0]), launcher: Number(t[1]) };
  // Created but not written yet by the launcher: as good as launching, by an unknown launcher.
  return { launching: 0 };
}

/**
 * Create `file` exclusively; false if it exists. A folder not there yet is made first: the run was
 * never launched, but a launch still on its way (from a dcm stopped before it sent it) would make
 * the folder itself and find no claim to refuse it. A folder that cannot be written to is one no
 * launcher of this user can start a run in either.
 */
function createClaim(file: string, text: string): boolean {
  for (let tries = 0; ; tries++) {
    try {
      fs.writeFileSync(file, text, { flag: 'wx', mode: PRIVATE_FILE });
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      if (code !== 'ENOENT' || tries > 0) return true;
      try {
        fs.mkdirSync(path.dirname(file), { recursive: true, mode: PRIVATE_DIR });
      } catch {
        return true;
      }
    }
  }
}

/** Claim a run for nobody: true if this call created the `.pid` file. */
export function abandonRun(base: string, runId: string): boolean {
  return createClaim(`${base}.pid`, `abandoned ${runId}\n`);
}

/** The files a run leaves beside its log. */
const RUN_FILES = ['.status', '.pid', '.next', '.err', '.run', '.progress'];

/**
 * Before a run starts at a path an earlier strategy used (the same folder): its files there would
 * tell a false story, and its `.pid` would stop the launcher, which claims a run by creating it.
 * A claim that names this run is never removed: another dcm made it (it took this run for nobody
 * once this one was taken over, stopped between the commit of the start and the launch), and the
 * launcher must refuse the run. Removing it would start the run after its state had been run again
 * as the next attempt. A claim naming another run cannot become this run's meanwhile: claims are
 * only ever created where there is none.
 */
export function clearEarlierRun(base: string, runId: string): void {
  const claims = ['.pid', '.run'].map((end) => readSmall(`${base}${end}`));
  // Each form of a claim ends with the run id it is for; an empty one is being written.
  if (claims.some((text) => text !== null && (text.trim() === '' || text.trim().split(/\s+/).includes(runId)))) return;
  for (const end of RUN_FILES) {
    // An absent claim stays absent: a dcm giving the run up may be creating it right now.
    if (end === '.pid' ? claims[0] === null : end === '.run' && claims[1] === null) continue;
    removeQuietly(`${base}${end}`);
  }
}

/** The last `max` bytes of a file ('' when it cannot be read). */
function tail(file: string, max: number): string {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return '';
  }
  try {
    const size = fs.fstatSync(fd).size;
    const len = Math.min(size, max);
    const buf = Buffer.alloc(len);
    fs.readSync(fd, buf, 0, len, size - len);
    return buf.toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/** The last non-empty line of a run's output (read from its log's last 8 KiB). */
export function lastLine(logFile: string): string {
  const lines = tail(logFile, 8192).split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i].trim();
    if (l) return l;
  }
  return '';
}

/**
 * The last non-empty match of `pattern` (`^` and `$` at each line) in a run's output, read from
 * its log's last MiB: its first group that matched if it has groups, else the whole match, on one line.
 */
export function lastMatch(logFile: string, pattern: string): string {
  let found = '';
  for (const m of tail(logFile, 1 << 20).matchAll(new RegExp(pattern, 'gm'))) {
    // The first group that took part in the match (a pattern of alternatives, each with its group,
    // as the Ansible example's: the task's message, else its stderr, else its stdout), else all of it.
    const text = (m.length > 1 ? (m.slice(1).find((g) => g !== undefined) ?? '') : m[0]).replace(/\s+/g, ' ').trim();
    if (text) found = text;
  }
  return found;
}

/**
 * The `.run` file: created exclusively by the run's wrapper as its first act (naming its run id),
 * or by a later dcm that takes the run for nobody (`abandoned <run id>`). Whoever creates it
 * decides whether the command ever runs.
 */
export type RunTaken = { byWrapper: true } | { abandoned: true } | null;

export function readTaken(base: string, runId: string): RunTaken {
  const text = readSmall(`${base}.run`);
  if (text === null) return null;
  const t = text.trim().split(/\s+/);
  if (t[0] === 'abandoned') return t[1] === runId ? { abandoned: true } : null;
  return t[0] === runId ? { byWrapper: true } : null;
}

/**
 * Take a run for nobody, so that its wrapper, if it is only now starting, exits without running
 * the command: true if this call created `.run`; false if the wrapper (or an earlier call) did.
 */
export function abandonStart(base: string, runId: string): boolean {
  return createClaim(`${base}.run`, `abandoned ${runId}\n`) || 'abandoned' in (readTaken(base, runId) ?? {});
}
