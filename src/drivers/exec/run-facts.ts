/**
 * What a run that ended left behind for its outcome to be read from (SPEC §7.2): the last line of
 * its stderr and of its log, the last match of its state's `reason` pattern, its `$DCM_NEXT`.
 * Read from the run's files where it ran; on a server's store, the launcher that ran it also
 * writes them (with the exit status) to `run_end`, so that a worker on another host that took
 * the run over reads the same outcome from the store (several hosts, README).
 *
 * Each fact is read only when asked: a run that ended 0 with no `.next` costs one look for it, as before.
 */
import fs from 'node:fs';
import { lastLine, lastMatch, readSmall } from './files.js';

export interface RunFacts {
  err(): string;
  log(): string;
  /** The last match of the state's `reason` pattern ('' without one). */
  match(): string;
  next(): string | null;
}

/** The facts of the run whose files are `<base>.*`, read from them. */
export function fileFacts(base: string, reason: string | undefined): RunFacts {
  return {
    err: () => lastLine(`${base}.err`),
    log: () => lastLine(`${base}.log`),
    match: () => (reason ? lastMatch(`${base}.log`, reason) : ''),
    // Most runs write no $DCM_NEXT: looked for first, so that its absence costs no failed open's error.
    next: () => (fs.existsSync(`${base}.next`) ? readSmall(`${base}.next`) : null),
  };
}

/** As stored: every fact read once, by the launcher, as the run ended. */
export interface StoredFacts {
  err: string;
  log: string;
  match: string;
  next: string | null;
  /** Why its launcher stopped it (its host woke past its worker's lease, the worker taken over); absent otherwise. */
  stopped?: string;
}

export function readAll(f: RunFacts): StoredFacts {
  return { err: f.err(), log: f.log(), match: f.match(), next: f.next() };
}

export function storedFacts(json: string): RunFacts {
  let s: Partial<StoredFacts> = {};
  try {
    s = JSON.parse(json) as Partial<StoredFacts>;
  } catch {
    // A row cut short cannot be: written in one statement. Read as a run that left nothing.
  }
  const text = (x: unknown) => (typeof x === 'string' ? x : '');
  return { err: () => text(s.err), log: () => text(s.log), match: () => text(s.match), next: () => (typeof s.next === 'string' ? s.next : null) };
}

/** Why the run's launcher stopped it, as stored with its end (StoredFacts.stopped); null when it did not. */
export function stoppedWhy(json: string): string | null {
  try {
    const s = JSON.parse(json) as Partial<StoredFacts>;
    return typeof s.stopped === 'string' && s.stopped !== '' ? s.stopped : null;
  } catch {
    return null;
  }
}
