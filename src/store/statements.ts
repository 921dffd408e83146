/**
 * Prepared statements, cached per connection. better-sqlite3 prepares anew on every `prepare`, and
 * a command over 20,000 named subclouds would otherwise prepare the same lookup 20,000 times.
 */
import type { Db, Statement } from '../platform/db.js';

const caches = new WeakMap<Db, Map<string, Statement>>();

export function sql(db: Db, text: string): Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let stmt = cache.get(text);
  if (!stmt) cache.set(text, (stmt = db.prepare(text)));
  return stmt;
}

/**
 * A value written into a statement's text, for statements sent without parameters (Db.atCommit):
 * text quoted (backslashes in the E'' form, whatever the server's standard_conforming_strings),
 * numbers as they are; null for what has no literal here (a number not finite, a NUL in text), for
 * the caller to send with parameters instead.
 */
export function sqlLiteral(value: string | number): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
  if (value.includes('\0')) return null;
  const quoted = `'${value.replace(/'/g, "''")}'`;
  return value.includes('\\') ? `E${quoted.replace(/\\/g, '\\\\')}` : quoted;
}

/**
 * The parameters of a statement built in parts (a filter's conditions, an IN list): each value
 * added gets the next `$n`, PostgreSQL's own numbering, which SQLite reads as a parameter named
 * by its number (platform/sqlite-db.ts binds it so).
 */
export class Params {
  readonly values: unknown[] = [];

  constructor(...first: unknown[]) {
    this.values.push(...first);
  }

  /** `$n` for `value`. */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** `$n, $n+1, …` for each of `values` (an IN list). */
  list(values: readonly unknown[]): string {
    return values.map((v) => this.add(v)).join(', ');
  }
}

/*
 * What SQLite and PostgreSQL say differently, in each one's own words. The rest of the store's
 * SQL is written once, in what both read alike (`$1` parameters, coalesce, string_agg, IS
 * DISTINCT FROM, quoted camelCase names).
 */

/**
 * A subquery of one column: the ids in a parameter holding them as a JSON array (`JSON.stringify(ids)`).
 * On a server the ids go through an array, whose unnest the planner counts as a few rows: the
 * rows of a JSON array it counts as a hundred, and so read a stage of ten thousand steps whole
 * (hashed) rather than look up the few a claim names by their key (3.6 ms a claim, not 0.15:
 * issue 51).
 */
export function idsIn(db: Db, param: string): string {
  return db.backend === 'postgresql'
    ? `SELECT unnest(ARRAY(SELECT json_array_elements_text(${param}::json))::bigint[])`
    : `SELECT value FROM json_each(${param})`;
}

/** The larger of two values: SQLite's max() of several arguments, PostgreSQL's GREATEST. */
export function greatest(db: Db, a: string, b: string): string {
  return db.backend === 'postgresql' ? `GREATEST(${a}, ${b})` : `max(${a}, ${b})`;
}

/** The smaller of two values: SQLite's min() of several arguments, PostgreSQL's LEAST. */
export function least(db: Db, a: string, b: string): string {
  return db.backend === 'postgresql' ? `LEAST(${a}, ${b})` : `min(${a}, ${b})`;
}

/** The milliseconds from one of dcm's timestamps (ISO 8601 text, UTC) to another, never below 0. */
export function msBetween(db: Db, from: string, to: string): string {
  const ms = db.backend === 'postgresql'
    ? `EXTRACT(EPOCH FROM CAST(${to} AS timestamp) - CAST(${from} AS timestamp)) * 1000`
    : `(julianday(${to}) - julianday(${from})) * 86400000.0`;
  return greatest(db, '0', ms);
}
