/**
 * A statement of the store's face on a PostgreSQL database (platform/pg-database.ts): run / get /
 * all / iterate, pluck and raw, as better-sqlite3's; each run a server-side prepared statement of
 * its connection, its parameters bound as the server wants them.
 */
import type { RunResult, Statement } from './db.js';
import type { PgQuery } from './pg-client.js';
import type { PgDatabase } from './pg-database.js';

type Params = unknown[];

export class PgStatement implements Statement {
  private plucked = false;
  private rawRows = false;
  readonly reader: boolean;

  constructor(
    private readonly db: PgDatabase,
    readonly text: string,
    /** A statement of the open transaction's handle (it runs at once). */
    private readonly inside = false,
  ) {
    this.reader = /^\s*(SELECT|WITH|VALUES)\b/i.test(text) || /\bRETURNING\b/i.test(text);
  }

  pluck(on = true): this {
    this.plucked = on;
    if (on) this.rawRows = false;
    return this;
  }

  raw(on = true): this {
    this.rawRows = on;
    if (on) this.plucked = false;
    return this;
  }

  /** The rows changed; a row's id is what the statement's own `RETURNING id` says (get). */
  async run(...params: Params): Promise<RunResult> {
    return { changes: (await this.db.answer(this.query(params), this.inside)).rowCount, lastInsertRowid: 0 };
  }

  async get(...params: Params): Promise<unknown> {
    return this.shape((await this.db.answer(this.query(params), this.inside)).rows)[0];
  }

  async all(...params: Params): Promise<unknown[]> {
    return this.shape((await this.db.answer(this.query(params), this.inside)).rows);
  }

  async *iterate(...params: Params): AsyncIterableIterator<unknown> {
    yield* await this.all(...params);
  }

  /** The query for the connection: bound parameters, rows as arrays when they are plucked or raw. */
  query(params: Params): PgQuery {
    return { text: this.text, values: this.bind(params), array: this.plucked || this.rawRows, name: this.db.statementName(this.text) };
  }

  private shape(rows: unknown[]): unknown[] {
    return this.plucked ? rows.map((r) => (r as unknown[])[0]) : rows;
  }

  private bind(params: Params): unknown[] {
    return params.map(value);
  }
}

/** SQLite binds what it is given; PostgreSQL needs text for text, and has no undefined. */
function value(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  return v;
}
