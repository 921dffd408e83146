/**
 * One connection, several tasks of one process. While a transaction is open on the connection,
 * only the handle its body was given (TxHandle) runs statements at once; a statement or
 * transaction through the connection itself waits for the end, as another process's would wait
 * for its lock, instead of running inside it.
 *
 * The handle is passed, not found: telling a task by AsyncLocalStorage instead cost a fifth of
 * figure 1's CPU on Node 20 (every promise of the process carries the storage from then on).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Backend, Db, Statement, Transaction } from './db.js';
import type { Clock } from './clock.js';

/**
 * DCM_CHECK_TURNS=1 (the tests set it): a statement through the connection inside its own
 * transaction's body, which would wait for that transaction's end for ever, throws instead,
 * naming the mistake. Off by default: it costs what the paragraph above says.
 */
const bodies = process.env.DCM_CHECK_TURNS === '1' ? new AsyncLocalStorage<ReadonlySet<Turns>>() : null;

export class Turns {
  private ended: Promise<void> | null = null;

  /** A transaction is open on the connection. */
  get held(): boolean {
    return this.ended !== null;
  }

  /**
   * What a statement does when `held` is not what it needs: one through the connection waits for
   * the open transaction's end; one through a transaction's handle after that end is a mistake.
   */
  async settle(inside: boolean): Promise<void> {
    if (inside) throw new Error("a transaction's statement was run after the transaction ended");
    if (bodies?.getStore()?.has(this)) throw new Error("a statement through the connection inside its own transaction: it would wait for ever (use the transaction's handle)");
    while (this.ended) await this.ended;
  }

  /** `body` as the connection's open transaction, once no other is open; `begin` may throw (a busy lock), and then nothing is held. */
  async hold<T>(begin: () => void | Promise<void>, body: () => Promise<T>): Promise<T> {
    // Checked again after each wait, in the same turn as the take: another waiter may have taken it.
    while (this.ended) await this.settle(false);
    let end!: () => void;
    this.ended = new Promise<void>((r) => (end = r));
    try {
      await begin();
      if (!bodies) return await body();
      return await bodies.run(new Set([...(bodies.getStore() ?? []), this]), body);
    } finally {
      this.ended = null;
      end();
    }
  }
}

/** What a backend's connection gives the handle of its open transaction. */
export interface Inside {
  readonly backend: Backend;
  readonly name: string;
  readonly memory: boolean;
  readonly open: boolean;
  readonly clock: Clock;
  /** A statement of the open transaction (it runs at once). */
  prepareInside(source: string): Statement;
  execInside(source: string): Promise<void>;
  /** Statements due by the open transaction's commit (Db.atCommit). */
  atCommitInside(source: string): Promise<void>;
  pragmaInside(source: string, options?: { simple?: boolean }): Promise<unknown>;
  /** `fn` in a savepoint of the open transaction. */
  savepoint<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * The open transaction's handle, given to its body: its statements are the transaction's, and a
 * transaction opened through it is a savepoint. One per connection, used by each transaction in
 * turn (the statement cache, store/statements.ts, keeps its statements across them).
 */
export class TxHandle implements Db {
  readonly inTransaction = true;
  readonly inside = this;

  constructor(private readonly conn: Inside) {}

  get backend(): Backend {
    return this.conn.backend;
  }

  get name(): string {
    return this.conn.name;
  }

  get memory(): boolean {
    return this.conn.memory;
  }

  get open(): boolean {
    return this.conn.open;
  }

  get clock(): Clock {
    return this.conn.clock;
  }

  prepare(source: string): Statement {
    return this.conn.prepareInside(source);
  }

  async exec(source: string): Promise<this> {
    await this.conn.execInside(source);
    return this;
  }

  atCommit(source: string): Promise<void> {
    return this.conn.atCommitInside(source);
  }

  pragma(source: string, options?: { simple?: boolean }): Promise<unknown> {
    return this.conn.pragmaInside(source, options);
  }

  /** A connection's settings and counters are its own, not a transaction's: asked inside one, they would wait for its end. */
  busyWait(): Promise<void> {
    throw new Error("a transaction's handle has no busy wait of its own: set its connection's");
  }

  commitCount(): Promise<number> {
    throw new Error("a transaction's handle has no commit count: ask its connection, between transactions");
  }

  transaction<T>(fn: (tx: Db) => Promise<T>): Transaction<T> {
    const tx = (() => this.conn.savepoint(() => fn(this))) as Transaction<T>;
    tx.deferred = tx;
    tx.immediate = tx;
    tx.alongside = tx;
    return tx;
  }

  close(): void {
    throw new Error("a transaction's handle is not closed: its connection is");
  }
}
