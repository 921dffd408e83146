/**
 * A PostgreSQL database with the face of a better-sqlite3 one, for the part of that face dcm uses:
 * `prepare` (run / get / all / iterate, pluck, raw), `transaction` (deferred / immediate, nested as
 * savepoints), `exec`, `pragma` (the few dcm asks) and `close`. The store's modules take either
 * without knowing which; what the SQL says differently is rewritten by the dialect.
 *
 * Writers take turns, as SQLite's do: an immediate transaction holds a transaction-level advisory
 * lock, so that dcm's check-then-write transactions (the apply lock's fence, the window's count)
 * see every earlier commit and no other writer between. A deferred transaction reads one snapshot
 * (REPEATABLE READ), as a SQLite read transaction does, and takes no lock.
 */
import { connectionLost, PgError, type PgQuery, type PgResult, type SyncPg } from './pg-sync.js';
import { asStoreError, connect, RESENDABLE } from './pg-connection.js';
import { toPg } from './pg-dialect.js';
import type { Db, RunResult, Statement, Transaction } from './db.js';
import { Turns, TxHandle, type Inside } from './turns.js';

/** The advisory lock every dcm writer of one database takes ("DCM1", as the SQLite file's mark). */
export const WRITER_LOCK = 0x44434d31;

type Params = unknown[];

/** What a database's schema tells the adapter (the store's: store/pg/schema.ts). */
export interface PgSchemaOptions {
  /** The advisory lock immediate transactions take (the store's by default). */
  writerLock?: number;
  /**
   * The tables whose rows get their id from the database: an INSERT into one returns the id it was
   * given, as SQLite's lastInsertRowid tells (RETURNING is added here, not written in the store).
   */
  identityTables?: ReadonlySet<string>;
  /**
   * A commit counter: `bump` runs inside every immediate transaction, so the counter moves exactly
   * when the commit is seen; `read` (one number) answers the `data_version` pragma.
   */
  version?: { bump: string; read: string };
}

export class PgStatement implements Statement {
  private plucked = false;
  private rawRows = false;
  readonly reader: boolean;
  private readonly text: string;
  private readonly names: string[];
  private readonly returnsId: boolean;

  constructor(
    private readonly db: PgDatabase,
    readonly source: string,
    /** A statement of the open transaction's handle (it runs at once). */
    private readonly inside = false,
  ) {
    const t = toPg(source);
    const into = /^\s*INSERT\s+INTO\s+(\w+)/i.exec(source)?.[1];
    this.returnsId = into !== undefined && db.identityTables.has(into) && !/\bRETURNING\b/i.test(source);
    this.text = this.returnsId ? `${t.text} RETURNING id` : t.text;
    this.names = t.names;
    this.reader = /^\s*(SELECT|WITH|VALUES)\b/i.test(source) || /\bRETURNING\b/i.test(source);
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

  /**
   * Inside a transaction the write is sent with the next statement that needs an answer (or the
   * commit), and its result is read only when asked for: a batch of writes is one round trip.
   */
  async run(...params: Params): Promise<RunResult> {
    if (this.db.turns.held !== this.inside) await this.db.turns.settle(this.inside);
    const q = this.query(params);
    const slot = this.db.send(this.returnsId ? { ...q, array: true } : q);
    const result = (): PgResult => {
      if (!slot.result) this.db.flush();
      if (!slot.result) throw new PgError('the statement was not run: its transaction failed before it', undefined);
      return slot.result;
    };
    const returnsId = this.returnsId;
    return {
      get changes() {
        return result().rowCount;
      },
      get lastInsertRowid() {
        const rows = result().rows;
        return returnsId ? ((rows[rows.length - 1] as number[] | undefined)?.[0] ?? 0) : 0;
      },
    };
  }

  async get(...params: Params): Promise<unknown> {
    if (this.db.turns.held !== this.inside) await this.db.turns.settle(this.inside);
    return this.shape(this.db.query(this.query(params)).rows)[0];
  }

  async all(...params: Params): Promise<unknown[]> {
    if (this.db.turns.held !== this.inside) await this.db.turns.settle(this.inside);
    return this.shape(this.db.query(this.query(params)).rows);
  }

  async *iterate(...params: Params): AsyncIterableIterator<unknown> {
    yield* await this.all(...params);
  }

  /** The query for the worker: bound parameters, rows as arrays when they are plucked or raw. */
  query(params: Params): PgQuery {
    return { text: this.text, values: this.bind(params), array: this.plucked || this.rawRows, name: this.db.statementName(this.text) };
  }

  private shape(rows: unknown[]): unknown[] {
    return this.plucked ? rows.map((r) => (r as unknown[])[0]) : rows;
  }

  private bind(params: Params): unknown[] {
    // better-sqlite3's forms: run(a, b), run([a, b]), run({ name: … }).
    const flat = params.length === 1 && Array.isArray(params[0]) ? (params[0] as unknown[]) : params;
    if (this.names.length === 0) return flat.map(value);
    const named = (flat[0] ?? {}) as Record<string, unknown>;
    return this.names.map((n) => {
      if (!(n in named)) throw new RangeError(`Missing named parameter "${n}"`);
      return value(named[n]);
    });
  }
}

/** SQLite binds what it is given; PostgreSQL needs text for text, and has no undefined. */
function value(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  return v;
}


export class PgDatabase implements Db, Inside {
  readonly turns = new Turns();
  readonly inside: Db = new TxHandle(this);
  readonly inTransaction = false;
  readonly memory = false;
  open = true;
  private depth = 0;
  private savepoints = 0;
  private queue: { q: PgQuery; slot: { result?: PgResult } }[] = [];
  private readonly names = new Map<string, string>();
  private conn: SyncPg;
  /** The connection failed: the next transaction (or statement outside one) opens a new one. */
  private lost = false;
  /** lock_timeout as last set (`busy_timeout`), set again on a new connection. */
  private lockTimeoutMs: number | null = null;
  /** Session settings (setSession), made again on a new connection. */
  private readonly session: string[] = [];

  private readonly writerLock: number;
  private readonly version: { bump: string; read: string } | undefined;
  readonly identityTables: ReadonlySet<string>;

  constructor(
    readonly name: string,
    private readonly url: string,
    opts: PgSchemaOptions = {},
  ) {
    this.writerLock = opts.writerLock ?? WRITER_LOCK;
    this.version = opts.version;
    this.identityTables = opts.identityTables ?? new Set();
    this.conn = connect(url, false);
  }

  /**
   * The server-side name of a prepared statement's text: parsed and planned once per connection,
   * then only bound and run (most of a short statement's cost on the server).
   */
  statementName(text: string): string {
    let name = this.names.get(text);
    if (!name) this.names.set(text, (name = `dcm${this.names.size + 1}`));
    return name;
  }

  /** Run `q` now, after the writes still waiting to be sent, in the same round trip. */
  query(q: PgQuery): PgResult {
    const slot = this.send(q);
    this.flush();
    return slot.result!;
  }

  /**
   * Queue `q`: outside a transaction it is sent at once; inside one, with the next statement that
   * needs an answer. An error of a queued statement is thrown by that statement (the transaction
   * is then failed, as in SQLite, whichever statement reports it).
   */
  send(q: PgQuery): { result?: PgResult } {
    if (this.depth === 0) this.reconnectIfLost();
    const slot: { result?: PgResult } = {};
    this.queue.push({ q, slot });
    if (this.depth === 0) {
      try {
        this.flush();
      } catch (err) {
        // A read (or a session setting) outside a transaction whose connection was cut (the
        // server restarted, an administrator ended the session) is sent again once on a new
        // connection: it changed nothing, and a command need not fail for it. A write is not: it
        // may have committed before the connection went.
        if (!this.lost || !RESENDABLE.test(q.text)) throw err;
        this.reconnectIfLost();
        this.queue.push({ q, slot });
        this.flush();
      }
    }
    return slot;
  }

  /** Send what is queued, in one round trip. */
  flush(): void {
    if (this.queue.length === 0) return;
    const items = this.queue;
    this.queue = [];
    let results: PgResult[];
    try {
      results = this.conn.many(items.map((i) => i.q));
    } catch (err) {
      if (connectionLost(err)) this.lost = true;
      throw asStoreError(err);
    }
    items.forEach((item, i) => (item.slot.result = results[i]));
  }

  prepare(source: string): PgStatement {
    return new PgStatement(this, source);
  }

  prepareInside(source: string): PgStatement {
    return new PgStatement(this, source, true);
  }

  /** Statements with no parameters, several at once (PostgreSQL's simple protocol); run now. */
  async exec(text: string): Promise<this> {
    if (this.turns.held) await this.turns.settle(false);
    this.query({ text });
    return this;
  }

  async execInside(text: string): Promise<void> {
    this.query({ text });
  }

  transaction<T>(fn: (tx: Db) => Promise<T>): Transaction<T> {
    const tx = (() => this.within('deferred', fn)) as Transaction<T>;
    tx.deferred = tx;
    tx.immediate = () => this.within('immediate', fn);
    return tx;
  }

  private within<R>(mode: 'deferred' | 'immediate', fn: (tx: Db) => Promise<R>): Promise<R> {
    return this.turns.hold(
      () => {},
      () => this.outermost(mode, () => fn(this.inside)),
    );
  }

  async savepoint<R>(fn: () => Promise<R>): Promise<R> {
    const sp = `dcm_sp${++this.savepoints}`;
    const made = this.send({ text: `SAVEPOINT ${sp}` });
    this.depth++;
    try {
      const r = await fn();
      // Sent now: a write of the savepoint's part that fails fails it here, where SQLite's would.
      this.query({ text: `RELEASE SAVEPOINT ${sp}` });
      return r;
    } catch (err) {
      try {
        // What the savepoint's part queued runs, then is undone with it.
        this.flush();
      } catch {
        // The transaction failed: rolling back to the savepoint still undoes it.
      }
      // A savepoint never made (what went before it failed, a busy lock say) has nothing to
      // undo: the transaction is failed, and the error is the one that failed it.
      if (made.result) {
        this.query({ text: `ROLLBACK TO SAVEPOINT ${sp}` });
        this.send({ text: `RELEASE SAVEPOINT ${sp}` });
      }
      throw err;
    } finally {
      this.depth--;
    }
  }

  private async outermost<R>(mode: 'deferred' | 'immediate', fn: () => Promise<R>): Promise<R> {
    // Sent with the transaction's first statement that needs an answer.
    this.reconnectIfLost();
    this.depth = 1;
    let xid: { result?: PgResult } | undefined;
    if (mode === 'immediate') {
      this.send({ text: 'BEGIN' });
      this.send({ text: 'SELECT pg_advisory_xact_lock($1)', values: [this.writerLock] });
      // The transaction's id, answered with its first read: should the connection go during the
      // COMMIT, the server may have committed before it went, and is asked (committedAfterAll).
      xid = this.send({ text: 'SELECT txid_current()', array: true });
    } else this.send({ text: 'BEGIN ISOLATION LEVEL REPEATABLE READ' });
    try {
      const r = await fn();
      if (mode === 'immediate' && this.version) this.send({ text: this.version.bump });
      try {
        this.query({ text: 'COMMIT' });
      } catch (err) {
        if (!this.lost || !this.committedAfterAll(xid?.result)) throw err;
      }
      return r;
    } catch (err) {
      this.queue = [];
      try {
        this.query({ text: 'ROLLBACK' });
      } catch {
        // The connection is gone: the server rolled the transaction back itself.
      }
      throw err;
    } finally {
      this.depth = 0;
    }
  }

  /**
   * The connection went during a COMMIT: whether the server committed all the same (its answer
   * was what was lost), asked on a new connection. A batch tried again after a commit it did not
   * hear of would find its own writes done, and stop the apply as if another process had made them.
   * Unknown (no id read yet, the server still away): not committed, as before.
   */
  private committedAfterAll(xid: PgResult | undefined): boolean {
    const id = (xid?.rows[0] as unknown[] | undefined)?.[0];
    if (id === undefined) return false;
    try {
      this.reconnectIfLost();
      const status = this.query({ text: 'SELECT txid_status($1)', values: [id], array: true }).rows[0] as unknown[] | undefined;
      return status?.[0] === 'committed';
    } catch {
      return false;
    }
  }

  /**
   * The pragmas dcm reads or sets, as PostgreSQL has them. The file's settings (journal, cache,
   * synchronous) have no meaning here; `data_version` (has anyone committed since?) is the commit
   * counter (PgSchemaOptions.version), which moves with every writer's commit, this one's included
   * (SQLite's leaves out the connection's own: here a reader may look once more than it needs).
   */
  async pragma(text: string, opts: { simple?: boolean } = {}): Promise<unknown> {
    if (this.turns.held) await this.turns.settle(false);
    return this.pragmaInside(text, opts);
  }

  async pragmaInside(text: string, opts: { simple?: boolean } = {}): Promise<unknown> {
    const m = /^\s*(\w+)\s*(?:=\s*(.+?)\s*)?(?:\((.*)\))?\s*$/.exec(text);
    const name = m?.[1].toLowerCase() ?? text;
    const set = m?.[2];
    const simple = (v: unknown) => (opts.simple ? v : [{ [name]: v }]);
    switch (name) {
      case 'busy_timeout':
        if (set !== undefined) {
          // SQLite's 0 is no wait at all; PostgreSQL's 0 is a wait without end: 1 ms is its least.
          this.lockTimeoutMs = Math.max(1, Number(set));
          this.query({ text: `SET lock_timeout = ${this.lockTimeoutMs}` });
        }
        return simple(Number(set ?? 0));
      case 'cache_size':
      case 'synchronous':
      case 'foreign_keys':
        return simple(set === undefined ? 0 : Number(set));
      case 'journal_mode':
        return simple('wal');
      case 'data_version': {
        if (!this.version) throw new PgError('PRAGMA data_version needs a commit counter (PgSchemaOptions.version)', undefined);
        const rows = this.query({ text: this.version.read, array: true }).rows as number[][];
        return simple(rows[0]?.[0] ?? 0);
      }
      case 'quick_check':
      case 'integrity_check':
        return opts.simple ? 'ok' : [{ [name]: 'ok' }];
      default:
        throw new PgError(`PRAGMA ${name} has no PostgreSQL equivalent in dcm`, undefined);
    }
  }

  /**
   * Only between transactions: a transaction whose connection failed has failed (the server rolled
   * it back), and none of its statements may run on another connection, outside it.
   */
  private reconnectIfLost(): void {
    if (!this.lost || !this.open) return;
    try {
      this.conn.close();
    } catch {
      // Already gone.
    }
    try {
      this.conn = connect(this.url, true);
    } catch (err) {
      // Still unreachable after a few seconds: this try fails as busy, and the next one connects again.
      throw asStoreError(err);
    }
    this.lost = false;
    if (this.lockTimeoutMs !== null) this.conn.query(`SET lock_timeout = ${this.lockTimeoutMs}`);
    for (const text of this.session) this.conn.query(text);
  }

  /**
   * A setting of the session (`SET search_path TO …`), made now and again on every new connection:
   * one made once would be lost with the first (a server restart, a cut), and the statements
   * after it would run without it.
   */
  setSession(text: string): void {
    this.query({ text });
    this.session.push(text);
  }

  close(): void {
    if (this.open) {
      this.open = false;
      this.conn.close();
    }
  }
}
