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
 * A name as one path component, the way the exec driver writes it: no `/` or NUL, never `.` or
 * `..`. A state or cloud name is found again by spelling it the same way.
 */
export function logComponent(name: string): string {
  const safe = name.replace(/[/\0]/g, '_');
  return safe === '.' || safe === '..' ? `_${safe}` : safe;
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
