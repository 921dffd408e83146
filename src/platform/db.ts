/**
 * The face of a dcm database the store's modules use, whichever backend holds it: every statement
 * and every transaction is asynchronous, so that a server that makes dcm wait (another session
 * holds the writers' lock, a slow network) never blocks the event loop — Ctrl-C, driver answers
 * and heartbeats go on meanwhile. A file answers at once (platform/sqlite-db.ts: its promises are
 * already settled); a server answers when it does.
 *
 * A transaction's statements are those run through the handle its body is given (`tx`): while one
 * is open, a statement or transaction through the connection itself waits for it to end, as
 * another process's would (platform/turns.ts). Inside a body, everything goes through `tx`.
 */

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

export interface Statement {
  get(...params: unknown[]): Promise<unknown>;
  all(...params: unknown[]): Promise<unknown[]>;
  run(...params: unknown[]): Promise<RunResult>;
  /** Rows one at a time (a file streams them; a server sends them all first). */
  iterate(...params: unknown[]): AsyncIterableIterator<unknown>;
  /** Rows as their first column's value. */
  pluck(on?: boolean): this;
  /** Rows as arrays of column values. */
  raw(on?: boolean): this;
}

export interface Transaction<T> {
  /** A reader's transaction: one snapshot, no lock. */
  (): Promise<T>;
  deferred(): Promise<T>;
  /** A writer's: it holds the writers' lock from its start, so it sees every earlier commit and no other writer. */
  immediate(): Promise<T>;
  /**
   * A writer's that writes only rows its own process holds (a worker's steps and runs, a site's
   * row): on a server it runs beside the others of its kind, and takes turns only with immediate
   * ones (it holds the writers' lock shared); what several of them share they lock row by row. A
   * file has one writer at a time: there it is immediate.
   */
  alongside(): Promise<T>;
}

import type { Clock } from './clock.js';

/** Which SQL the database speaks: the store writes each one's own where they differ (store/statements.ts). */
export type Backend = 'sqlite' | 'postgresql';

export interface Db {
  readonly backend: Backend;
  /** The file's path, or the server's address (without its password). */
  readonly name: string;
  /** An in-memory database (tests and read-only snapshots). */
  readonly memory: boolean;
  /** Not closed yet. */
  readonly open: boolean;
  /** This is an open transaction's handle (a transaction through it is a savepoint). */
  readonly inTransaction: boolean;
  /**
   * The clock of the process that holds the connection (its runtime's: platform/runtime.ts): the
   * times the store writes, and a lease's clock where the runtime stands in for the server's.
   * A transaction's handle has its connection's.
   */
  readonly clock: Clock;
  /**
   * The handle every transaction of this connection gives its body: for statements prepared once
   * and run only inside the connection's transactions (run outside one, they throw).
   */
  readonly inside: Db;
  prepare(source: string): Statement;
  /** Statements with no parameters, run now. */
  exec(source: string): Promise<this>;
  /**
   * Statements with no parameters whose results nobody reads, due by the transaction's commit: on
   * a server sent with its COMMIT, in the same round trip (one less for every batch of a worker:
   * issue 51), and holding what they lock only for that round trip; on a file, or outside a
   * transaction, run now. Rolled back with the savepoint they were given in.
   */
  atCommit(source: string): Promise<void>;
  /**
   * A read every write transaction of this connection begins with, under `key`, answered with its
   * BEGIN (a server's: a round trip less for each of a worker's batches, for its fence and its
   * look at the strategy); the transaction's own first run of it with the same values takes that
   * answer. Null: none under `key`. Values are numbers or plain words (else it is not read early:
   * false). A file has no round trips to save: absent.
   */
  readAtBegin?(key: string, text: string | null, values?: readonly (string | number)[]): boolean;
  /**
   * How long a statement waits for another writer before it fails busy (SQLite's busy_timeout,
   * PostgreSQL's lock_timeout); 0: it does not wait.
   */
  busyWait(ms: number): Promise<void>;
  /**
   * A statement outside a transaction that another session's lock kept waiting past the busy wait
   * (PostgreSQL: LOCK TABLE, DDL, VACUUM FULL, which block reads too) is tried again once `hook`
   * resolves; `hook` throws to give up (its error is the statement's). Nothing was done by the
   * statement refused (it was one transaction of its own). So is a read whose connection to the
   * server was lost and could not be made again at once. No hook (the default): it fails busy.
   * A file's readers never wait (WAL): SQLite has none.
   */
  waitForLocks?(hook: ((err: unknown) => Promise<void>) | null): void;
  /** A number that moves whenever anyone commits to the database: whether to read again. */
  commitCount(): Promise<number>;
  /** A file's own settings and checks (SQLite's pragmas): a server has none, and refuses. */
  pragma(source: string, options?: { simple?: boolean }): Promise<unknown>;
  /** `fn` in one transaction, given its handle; through a transaction's handle, a savepoint. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Transaction<T>;
  close(): void;
}
