/**
 * The exec driver's run logs as `strategy-step logs` finds them (SPEC §7.2): one file per run,
 * `<attempt>-<state>.log` in the subcloud's folder. Pure: names in, runs in run order out.
 */
import path from 'node:path';

/** A run's log as found in the subcloud's folder. */
export interface LogRun {
  /** The file's name inside the subcloud's folder. */
  file: string;
  attempt: number;
  /** The state's name when it is one of the known states, else the name as the file spells it. */
  state: string;
  /** The state's place among the type's states (runs sort by it); -1 when unknown. */
  index: number;
}

/**
 * A name as one path component, the way the exec driver writes it. The encoding is injective (two
 * names never share a component) and its result is never `.`, `..`, hidden, or holds `/`: `%`,
 * `/` and control characters are percent-encoded (`a/b` → `a%2Fb`, `%` → `%25`), and so is a
 * leading `.` (`..` → `%2E.`). Everything else is kept, so most names read as they are.
 */
export function logComponent(name: string): string {
  const safe = name.replace(/[%/\p{Cc}]/gu, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  return safe.startsWith('.') ? `%2E${safe.slice(1)}` : safe;
}

/** The longest file name a file system takes (ext4, xfs, btrfs, tmpfs: 255 bytes). */
export const MAX_NAME_BYTES = 255;

/** The longest run file name around a state's component: the attempt (up to 6 digits), `-`, `.status`. */
const RUN_FILE_EXTRA = '999999-'.length + '.status'.length;

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

/**
 * Why the exec driver could not make its run files for this subcloud (`kind` 'cloud') or state
 * ('state'), or null: the folder or file name would pass the file system's 255-byte limit.
 */
export function logNameProblem(kind: 'cloud' | 'state', name: string): string | null {
  const bytes = utf8Length(logComponent(name)) + (kind === 'state' ? RUN_FILE_EXTRA : 0);
  if (bytes <= MAX_NAME_BYTES) return null;
  const what = kind === 'cloud' ? 'its log folder name' : 'its run log file names';
  return `${what} would be ${bytes} bytes, over the file system's limit of ${MAX_NAME_BYTES}`;
}

/** The folder of run logs when the strategy names none: beside the database. */
export function defaultLogDir(dbPath: string): string {
  return `${dbPath}.logs`;
}

/** Where a run's files go, without their ending: `DIR/<cloud>/<attempt>-<state>` (the log adds `.log`). */
export function runBase(logDir: string, cloud: string, attempt: number, state: string): string {
  return path.join(logDir, logComponent(cloud), `${attempt}-${logComponent(state)}`);
}

const LOG_NAME = /^(\d+)-(.+)\.log$/;

/**
 * The run logs among a folder's file names, in run order: by the state's place in the type, then
 * by attempt (a state's retries all run before the next state starts); logs of states the type
 * does not have (an earlier strategy's) come last, by name.
 */
export function logRuns(names: readonly string[], states: readonly string[]): LogRun[] {
  const byComponent = new Map(states.map((s, i) => [logComponent(s), { state: s, index: i }]));
  const runs: LogRun[] = [];
  for (const file of names) {
    const m = LOG_NAME.exec(file);
    if (!m) continue;
    const known = byComponent.get(m[2]);
    runs.push({ file, attempt: Number(m[1]), state: known?.state ?? m[2], index: known?.index ?? -1 });
  }
  const rank = (r: LogRun) => (r.index < 0 ? Number.MAX_SAFE_INTEGER : r.index);
  return runs.sort((a, b) => rank(a) - rank(b) || (a.index < 0 ? a.state.localeCompare(b.state) : 0) || a.attempt - b.attempt);
}

export function selectRuns(runs: readonly LogRun[], filter: { state?: string; attempt?: number }): LogRun[] {
  return runs.filter(
    (r) => (filter.state === undefined || r.state === filter.state) && (filter.attempt === undefined || r.attempt === filter.attempt),
  );
}

/** The line that separates runs when several are printed, in the manner of `tail`. */
export function runHeader(r: Pick<LogRun, 'attempt' | 'state'>): string {
  return `==> attempt ${r.attempt}, ${r.state} <==`;
}

/** `'a', 'b', 'c'`: state names hold spaces, so each is quoted. */
export function quoteList(names: readonly string[]): string {
  return names.map((n) => `'${n}'`).join(', ');
}
