/**
 * Helpers for reading what an apply did, from `dcm strategy-step history -f json` and
 * `dcm strategy-step list -f json`: runs per (subcloud, state), subclouds in flight over time.
 */
import { parseTimestamp } from '../../src/domain/time.js';
import type { ChildProcess } from 'node:child_process';
import { afterEach } from '@jest/globals';
import { dcmSpawn, tempDir } from './cli.js';
import { dcmQuickOk } from './quick.js';
import type { HistoryRow, StepRow } from '../../src/store/steps.js';

/** A history row as `strategy-step history -f json` prints it (the store's own row shape). */
export type HistoryRun = HistoryRow;

/**
 * A step as `strategy-step list -f json -c … -c 'stage number'` prints it, with `stage` dcm's stage
 * number (the list's own `stage` column is the server's word, Create/Apply/Complete).
 */
export type StepRecord = Pick<StepRow, 'cloud' | 'stage' | 'state' | 'details' | 'started_at' | 'finished_at'>;

/** The records of a list; the `<none>` row dcmanager's client prints for an empty list is none. */
function records<T extends { state: unknown }>(text: string): T[] {
  return (JSON.parse(text) as T[]).filter((r) => r.state !== '<none>');
}

export function history(db: string, cloud?: string): HistoryRun[] {
  const args = ['--db', db, 'strategy-step', 'history', ...(cloud ? [cloud] : []), '-f', 'json', '--noindent'];
  return records<HistoryRun>(dcmQuickOk(args).stdout);
}

export function steps(db: string): StepRecord[] {
  const columns = ['cloud', 'state', 'details', 'started_at', 'finished_at', 'stage number'].flatMap((c) => ['-c', c]);
  const rows = records<Omit<StepRecord, 'stage'> & { 'stage number': number }>(
    dcmQuickOk(['--db', db, 'strategy-step', 'list', '-f', 'json', '--noindent', ...columns]).stdout,
  );
  return rows.map(({ 'stage number': stage, ...r }) => ({ ...r, stage }));
}

export function strategyState(db: string): string {
  return (JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'show', '-f', 'json']).stdout) as { state: string }).state;
}

/** Microseconds since the epoch. */
export const micros = (t: string): number => parseTimestamp(t);

/** Count of values. */
export function countBy<T>(items: readonly T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[key(i)] = (out[key(i)] ?? 0) + 1;
  return out;
}

/** Runs grouped by (cloud, state), each group in attempt order. */
export function runsByCloudState(runs: readonly HistoryRun[]): Map<string, HistoryRun[]> {
  const out = new Map<string, HistoryRun[]>();
  for (const r of runs) {
    const k = `${r.cloud}\u0000${r.state}`;
    if (!out.has(k)) out.set(k, []);
    out.get(k)!.push(r);
  }
  for (const list of out.values()) list.sort((a, b) => a.attempt - b.attempt);
  return out;
}

/**
 * Problems with "exactly one `ok` run per (subcloud, state)" for subclouds that completed: the
 * states each walked, the ok count of each. An empty list means all is well.
 */
export function okRunProblems(runs: readonly HistoryRun[], clouds: readonly string[], states: readonly string[]): string[] {
  const byKey = runsByCloudState(runs);
  const problems: string[] = [];
  for (const cloud of clouds) {
    for (const state of states) {
      const list = byKey.get(`${cloud}\u0000${state}`) ?? [];
      const ok = list.filter((r) => r.outcome === 'ok').length;
      if (ok !== 1) problems.push(`${cloud} / ${state}: ${ok} ok runs (${list.map((r) => r.outcome).join(', ')})`);
    }
  }
  const known = new Set(clouds.flatMap((c) => states.map((s) => `${c}\u0000${s}`)));
  const mine = new Set(clouds);
  for (const k of byKey.keys()) if (mine.has(k.split('\u0000')[0]) && !known.has(k)) problems.push(`unexpected run ${k.replace('\u0000', ' / ')}`);
  return problems;
}

/** A subcloud is in flight from its first run's start to its last run's end. */
export interface Flight {
  cloud: string;
  start: number;
  end: number;
}

export function flights(runs: readonly HistoryRun[]): Map<string, Flight> {
  const out = new Map<string, Flight>();
  for (const r of runs) {
    const start = micros(r.started_at);
    const end = r.finished_at ? micros(r.finished_at) : Number.POSITIVE_INFINITY;
    const f = out.get(r.cloud);
    if (!f) out.set(r.cloud, { cloud: r.cloud, start, end });
    else {
      f.start = Math.min(f.start, start);
      f.end = Math.max(f.end, end);
    }
  }
  return out;
}

/** The largest number of subclouds in flight at one moment. */
export function peakInFlight(fl: Iterable<Flight>): number {
  const events: [number, number][] = [];
  for (const f of fl) events.push([f.start, 1], [f.end, -1]);
  // At the same microsecond an end comes before a start: the slot was given back first.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, d] of events) {
    now += d;
    peak = Math.max(peak, now);
  }
  return peak;
}

/** `peak N subclouds in flight, window W` from the summary line on stderr. */
export function summaryPeak(stderr: string): { peak: number; window: number } | null {
  const m = /peak (\d+) subclouds in flight, window (\d+)/.exec(stderr);
  return m ? { peak: Number(m[1]), window: Number(m[2]) } : null;
}

/** s1 … sN */
export const names = (n: number, prefix = 's', from = 1): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${i + from}`);

/** Add `n` subclouds (s1 … sN unless `clouds` is given) and create a strategy with `createArgs`. */
export function createFleet(db: string, clouds: string[], createArgs: string[], type = 'patch'): void {
  dcmQuickOk(['--db', db, 'subcloud', 'add', ...clouds, '-f', 'value', '-c', 'id']);
  dcmQuickOk(['--db', db, 'strategy', 'create', '--type', type, ...createArgs]);
}

/** Transition lines on stderr (`<time> <cloud>: <from> -> <to>`). */
export const TRANSITION = / -> /;

const children = new Set<ChildProcess>();

/** dcmSpawn, remembered so that a failed test leaves no process behind (see killLeftovers). */
export function spawnDcm(args: string[], env: Record<string, string> = {}, opts: { detached?: boolean; stderrFile?: string } = {}): ReturnType<typeof dcmSpawn> {
  const run = dcmSpawn(args, env, opts);
  children.add(run.child);
  void run.done.then(() => children.delete(run.child));
  return run;
}

/** SIGKILL every process started by spawnDcm that is still running; for afterEach. */
export function killLeftovers(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.clear();
}

/**
 * The temporary folders of an e2e file's tests, each removed when its test ends, after every dcm
 * the test spawned is killed (a failed test leaves no process behind, and no process writes into a
 * removed folder). Call once at the top of the file; call what it returns in each test.
 */
export function tempPerTest(): () => ReturnType<typeof tempDir> {
  const made: (() => void)[] = [];
  afterEach(() => {
    killLeftovers();
    for (const cleanup of made.splice(0)) cleanup();
  });
  return () => {
    const t = tempDir();
    made.push(t.cleanup);
    return t;
  };
}
