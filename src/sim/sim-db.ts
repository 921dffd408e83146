/**
 * A simulated process's connection to the store, as the world lets it through: a statement of a
 * host cut off from the store waits until the host is back (a partition: nothing answers, nothing
 * fails at once), a killed process's never comes back, and a file never makes a process wait in
 * SQLite itself (its busy timeout would stop the whole simulator in real time: dcm's own tries,
 * on its runtime's timers, wait instead). Everything else is the real connection's.
 */
import type { Backend, Db, RunResult, Statement, Transaction } from '../platform/db.js';
import type { Clock } from '../platform/clock.js';
import { batchWritesAs } from '../store/transitions.js';

/** Resolves when the process may reach the store; undefined: it may now. */
export type Gate = () => Promise<void> | undefined;

const OPEN: Gate = () => undefined;

class GatedStatement implements Statement {
  constructor(
    private readonly real: Statement,
    private readonly gate: Gate,
  ) {}

  private call<T>(fn: () => Promise<T>): Promise<T> {
    const g = this.gate();
    return g ? g.then(fn) : fn();
  }

  get(...params: unknown[]): Promise<unknown> {
    return this.call(() => this.real.get(...params));
  }

  all(...params: unknown[]): Promise<unknown[]> {
    return this.call(() => this.real.all(...params));
  }

  run(...params: unknown[]): Promise<RunResult> {
    return this.call(() => this.real.run(...params));
  }

  async *iterate(...params: unknown[]): AsyncIterableIterator<unknown> {
    await this.gate();
    yield* this.real.iterate(...params);
  }

  pluck(on?: boolean): this {
    this.real.pluck(on);
    return this;
  }

  raw(on?: boolean): this {
    this.real.raw(on);
    return this;
  }
}

export class GatedDb implements Db {
  private handle: GatedDb | null = null;

  constructor(
    private readonly real: Db,
    private readonly gate: Gate,
    /** Never wait inside the database for another writer (a file's). */
    private readonly noWait: boolean,
  ) {
    // A server's batch of transitions is one statement of its own (store/pg/transitions.ts).
    batchWritesAs(this, real);
  }

  get backend(): Backend {
    return this.real.backend;
  }

  get name(): string {
    return this.real.name;
  }

  get memory(): boolean {
    return this.real.memory;
  }

  get open(): boolean {
    return this.real.open;
  }

  get inTransaction(): boolean {
    return this.real.inTransaction;
  }

  get clock(): Clock {
    return this.real.clock;
  }

  /**
   * A transaction's statements are not held: one begun before its host was cut off runs to its end,
   * as if the partition had come right after it (a file's writers' lock held across a partition
   * would stop every other simulated host, which a server's session timeout would not).
   */
  get inside(): Db {
    return this.real.inTransaction ? this : (this.handle ??= new GatedDb(this.real.inside, OPEN, this.noWait));
  }

  prepare(source: string): Statement {
    // A statement prepared through the connection is cached by the store per connection object: this one.
    return new GatedStatement(this.real.prepare(source), this.gate);
  }

  async exec(source: string): Promise<this> {
    await this.gate();
    await this.real.exec(source);
    return this;
  }

  readAtBegin(key: string, text: string | null, values?: readonly (string | number)[]): boolean {
    return this.real.readAtBegin?.(key, text, values) ?? false;
  }

  async atCommit(source: string): Promise<void> {
    await this.gate();
    await this.real.atCommit(source);
  }

  async busyWait(ms: number): Promise<void> {
    await this.real.busyWait(this.noWait ? 0 : ms);
  }

  /** The apply's wait for a read kept out (a lock, a lost connection) reaches the real store: without it the simulator ran an apply wired otherwise than the real one. */
  waitForLocks(hook: ((err: unknown) => Promise<void>) | null): void {
    this.real.waitForLocks?.(hook);
  }

  async commitCount(): Promise<number> {
    await this.gate();
    return await this.real.commitCount();
  }

  async pragma(source: string, options?: { simple?: boolean }): Promise<unknown> {
    await this.gate();
    return await this.real.pragma(source, options);
  }

  transaction<T>(fn: (tx: Db) => Promise<T>): Transaction<T> {
    const real = this.real.transaction((tx) => fn(this.handleOf(tx)));
    const wrap = (start: () => Promise<T>) => () => {
      const g = this.gate();
      return g ? g.then(start) : start();
    };
    const tx = wrap(() => real()) as Transaction<T>;
    tx.deferred = wrap(() => real.deferred());
    tx.immediate = wrap(() => real.immediate());
    tx.alongside = wrap(() => real.alongside());
    return tx;
  }

  /** The gated handle of a transaction's handle (one per handle, as the store caches statements per handle). */
  private handleOf(tx: Db): Db {
    return (this.handle ??= new GatedDb(tx, OPEN, this.noWait));
  }

  close(): void {
    this.real.close();
  }
}
