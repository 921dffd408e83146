/**
 * A better-sqlite3 database with the store's asynchronous face (store/db.ts). A file answers at
 * once: each promise is settled when it is returned, so a statement costs one turn of the
 * microtask queue more than better-sqlite3's own, and nothing else of the process runs in
 * between but what was already due. Transactions are BEGIN / COMMIT, with the connection held
 * for the handle their body is given (Turns, TxHandle).
 */
import type DatabaseT from 'better-sqlite3';
import type { Backend, Db, RunResult, Statement, Transaction } from './db.js';
import { Turns, TxHandle, type Inside } from './turns.js';
import { REAL_CLOCK, type Clock } from './clock.js';

type Raw = DatabaseT.Database;

/**
 * The store writes PostgreSQL's numbered parameters (`$1`, `$2`…). SQLite reads them as they are,
 * as parameters named by their number, which better-sqlite3 binds from an object; binding by name
 * cost half as much again as an import's 25-column insert itself. A statement whose numbers each
 * appear once and in order (nearly all of them) is prepared with anonymous parameters instead,
 * bound by position. (The store's SQL has no `$` and digit inside a literal.)
 */
function prepareNumbered(raw: Raw, source: string): { stmt: DatabaseT.Statement; byNumber: boolean } {
  const numbers = [...source.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
  if (numbers.length === 0) return { stmt: raw.prepare(source), byNumber: false };
  if (numbers.every((n, i) => n === i + 1)) return { stmt: raw.prepare(source.replace(/\$\d+/g, '?')), byNumber: false };
  return { stmt: raw.prepare(source), byNumber: true };
}

function numberedValues(params: unknown[]): unknown[] {
  const named: Record<number, unknown> = {};
  for (let i = 0; i < params.length; i++) named[i + 1] = params[i];
  return [named];
}

class SqliteStatement implements Statement {
  private readonly stmt: DatabaseT.Statement;
  private readonly byNumber: boolean;

  constructor(
    private readonly turns: Turns,
    raw: Raw,
    source: string,
    /** A statement of the open transaction's handle (it runs at once). */
    private readonly inside: boolean,
  ) {
    ({ stmt: this.stmt, byNumber: this.byNumber } = prepareNumbered(raw, source));
  }

  // Not async functions: a statement whose turn it is runs as it is called and hands back a
  // settled promise, without an async function's frame (figure 1's garbage: 170,000 statements).
  get(...params: unknown[]): Promise<unknown> {
    return this.call('get', params);
  }

  all(...params: unknown[]): Promise<unknown[]> {
    return this.call('all', params) as Promise<unknown[]>;
  }

  run(...params: unknown[]): Promise<RunResult> {
    return this.call('run', params) as Promise<RunResult>;
  }

  private call(method: 'get' | 'all' | 'run', params: unknown[]): Promise<unknown> {
    if (this.turns.held !== this.inside) return this.later(method, params);
    try {
      return Promise.resolve(this.stmt[method](...this.values(params)));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Once the connection's turn is this statement's (a transaction's body's, or nobody's). */
  private async later(method: 'get' | 'all' | 'run', params: unknown[]): Promise<unknown> {
    await this.turns.settle(this.inside);
    return this.stmt[method](...this.values(params));
  }

  private values(params: unknown[]): unknown[] {
    return this.byNumber ? numberedValues(params) : params;
  }

  async *iterate(...params: unknown[]): AsyncIterableIterator<unknown> {
    if (this.turns.held !== this.inside) await this.turns.settle(this.inside);
    yield* this.stmt.iterate(...this.values(params));
  }

  pluck(on = true): this {
    this.stmt.pluck(on);
    return this;
  }

  raw(on = true): this {
    this.stmt.raw(on);
    return this;
  }
}

export class SqliteDb implements Db, Inside {
  private readonly turns = new Turns();
  readonly inside: Db = new TxHandle(this);
  private savepoints = 0;
  private dataVersion: ReturnType<Raw['prepare']> | null = null;
  /** BEGIN, COMMIT and ROLLBACK, prepared once (as better-sqlite3's own transactions do): exec parses them anew each time. */
  private readonly control = new Map<string, DatabaseT.Statement<[]>>();
  readonly inTransaction = false;
  readonly backend: Backend = 'sqlite';

  /** The holder's clock (platform/db.ts): this process's unless its runtime gives another. */
  clock: Clock = REAL_CLOCK;

  constructor(readonly raw: Raw) {}

  get name(): string {
    return this.raw.name;
  }

  get memory(): boolean {
    return this.raw.memory;
  }

  get open(): boolean {
    return this.raw.open;
  }

  prepare(source: string): Statement {
    return new SqliteStatement(this.turns, this.raw, source, false);
  }

  prepareInside(source: string): Statement {
    return new SqliteStatement(this.turns, this.raw, source, true);
  }

  async exec(source: string): Promise<this> {
    if (this.turns.held) await this.turns.settle(false);
    this.raw.exec(source);
    return this;
  }

  async execInside(source: string): Promise<void> {
    this.raw.exec(source);
  }

  /** A file's commit is no round trip: now. */
  async atCommit(source: string): Promise<void> {
    await this.exec(source);
  }

  async atCommitInside(source: string): Promise<void> {
    this.raw.exec(source);
  }

  async busyWait(ms: number): Promise<void> {
    if (this.turns.held) await this.turns.settle(false);
    this.raw.pragma(`busy_timeout = ${Math.max(0, Math.floor(ms))}`);
  }

  /** PRAGMA data_version, prepared once (better-sqlite3's `pragma()` prepares it anew each time, and the orchestrator asks four times a second). */
  async commitCount(): Promise<number> {
    if (this.turns.held) await this.turns.settle(false);
    return (this.dataVersion ??= this.raw.prepare('PRAGMA data_version').pluck()).get() as number;
  }

  async pragma(source: string, options?: { simple?: boolean }): Promise<unknown> {
    if (this.turns.held) await this.turns.settle(false);
    return this.raw.pragma(source, options);
  }

  async pragmaInside(source: string, options?: { simple?: boolean }): Promise<unknown> {
    return this.raw.pragma(source, options);
  }

  transaction<T>(fn: (tx: Db) => Promise<T>): Transaction<T> {
    const tx = (() => this.within('BEGIN', fn)) as Transaction<T>;
    tx.deferred = tx;
    tx.immediate = () => this.within('BEGIN IMMEDIATE', fn);
    tx.alongside = tx.immediate;
    return tx;
  }

  private within<T>(begin: string, fn: (tx: Db) => Promise<T>): Promise<T> {
    return this.turns.hold(
      () => void this.command(begin),
      async () => {
        try {
          const r = await fn(this.inside);
          this.command('COMMIT');
          return r;
        } catch (err) {
          if (this.raw.inTransaction) this.command('ROLLBACK');
          throw err;
        }
      },
    );
  }

  private command(source: string): void {
    let stmt = this.control.get(source);
    if (!stmt) this.control.set(source, (stmt = this.raw.prepare<[]>(source)));
    stmt.run();
  }

  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    const sp = `dcm_sp${++this.savepoints}`;
    this.raw.exec(`SAVEPOINT ${sp}`);
    try {
      const r = await fn();
      this.raw.exec(`RELEASE ${sp}`);
      return r;
    } catch (err) {
      if (this.raw.inTransaction) {
        this.raw.exec(`ROLLBACK TO ${sp}`);
        this.raw.exec(`RELEASE ${sp}`);
      }
      throw err;
    }
  }

  close(): void {
    this.raw.close();
  }
}
