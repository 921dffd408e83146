/**
 * A better-sqlite3 database with the store's asynchronous face (store/db.ts). A file answers at
 * once: each promise is settled when it is returned, so a statement costs one turn of the
 * microtask queue more than better-sqlite3's own, and nothing else of the process runs in
 * between but what was already due. Transactions are BEGIN / COMMIT, with the connection held
 * for the handle their body is given (Turns, TxHandle).
 */
import type DatabaseT from 'better-sqlite3';
import type { Db, RunResult, Statement, Transaction } from './db.js';
import { Turns, TxHandle, type Inside } from './turns.js';

type Raw = DatabaseT.Database;

class SqliteStatement implements Statement {
  constructor(
    private readonly turns: Turns,
    private readonly stmt: DatabaseT.Statement,
    /** A statement of the open transaction's handle (it runs at once). */
    private readonly inside: boolean,
  ) {}

  async get(...params: unknown[]): Promise<unknown> {
    if (this.turns.held !== this.inside) await this.turns.settle(this.inside);
    return this.stmt.get(...params);
  }

  async all(...params: unknown[]): Promise<unknown[]> {
    if (this.turns.held !== this.inside) await this.turns.settle(this.inside);
    return this.stmt.all(...params);
  }

  async run(...params: unknown[]): Promise<RunResult> {
    if (this.turns.held !== this.inside) await this.turns.settle(this.inside);
    return this.stmt.run(...params);
  }

  async *iterate(...params: unknown[]): AsyncIterableIterator<unknown> {
    if (this.turns.held !== this.inside) await this.turns.settle(this.inside);
    yield* this.stmt.iterate(...params);
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
  readonly inTransaction = false;

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
    return new SqliteStatement(this.turns, this.raw.prepare(source), false);
  }

  prepareInside(source: string): Statement {
    return new SqliteStatement(this.turns, this.raw.prepare(source), true);
  }

  async exec(source: string): Promise<this> {
    if (this.turns.held) await this.turns.settle(false);
    this.raw.exec(source);
    return this;
  }

  async execInside(source: string): Promise<void> {
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
    return tx;
  }

  private within<T>(begin: string, fn: (tx: Db) => Promise<T>): Promise<T> {
    return this.turns.hold(
      () => void this.raw.exec(begin),
      async () => {
        try {
          const r = await fn(this.inside);
          this.raw.exec('COMMIT');
          return r;
        } catch (err) {
          if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
          throw err;
        }
      },
    );
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
