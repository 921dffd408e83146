/**
 * The store's face (platform/db.ts) on a PostgreSQL database: `prepare` (run / get / all /
 * iterate, pluck, raw), `transaction` (deferred / immediate, nested as savepoints), `exec`,
 * `busyWait`, `commitCount` and `close`; a file's pragmas it refuses. The store's modules take
 * either backend; their SQL is PostgreSQL's as written (`$1` parameters, and each backend's own
 * words where the two differ: store/statements.ts), sent as it is.
 *
 * Writers take turns, as SQLite's do, except the workers' own: an immediate transaction holds a
 * transaction-level advisory lock, so that dcm's check-then-write transactions (a takeover, an
 * operator's command, a stage's end) see every earlier commit and no other writer between. An
 * alongside transaction (a worker's batch, a site's write) holds the same lock shared: such
 * transactions run side by side, each writing rows its own process holds (issue 51: one global
 * turn made four workers ten times slower than one file), and an immediate one waits for them all
 * and they for it. What they do share they lock row by row, in one order (the claims' lock,
 * store/workers.ts; the duration statistics, sorted). A deferred transaction reads one snapshot
 * (REPEATABLE READ), as a SQLite read transaction does, and takes no lock.
 */
import crypto from 'node:crypto';
import { connectionLost, PgError, type PgClient, type PgQuery, type PgResult } from './pg-client.js';
import { asStoreError, connect, RESENDABLE } from './pg-connection.js';
import type { Backend, Db, Transaction } from './db.js';
import { PgStatement } from './pg-statement.js';
import { Turns, TxHandle, type Inside } from './turns.js';
import { REAL_CLOCK, type Clock } from './clock.js';
import { pgParamsOf, type PgParams } from './pg-params.js';

/** The advisory lock every dcm writer of one database takes ("DCM1", as the SQLite file's mark). */
export const WRITER_LOCK = 0x44434d31;

/** What a database's schema tells the adapter (the store's: store/pg/schema.ts). */
export interface PgSchemaOptions {
  /** The advisory lock immediate transactions take (the store's by default). */
  writerLock?: number;
  /**
   * A commit counter, moved by every writer's commit and seen exactly when the commit is; `read`
   * (one number) answers commitCount. `bump` runs inside every immediate transaction; `bumpAlongside`
   * (given a key of the connection's own, plain text) inside every alongside one, on a row of that
   * connection's alone, so that writers side by side never wait for one another's counter. The
   * immediate bump may fold those rows into its own (their sum unchanged): none is being written then.
   */
  version?: { bump: string; bumpAlongside: (key: string) => string; read: string };
}

/** How a transaction begins: a reader's snapshot, the writers' lock whole, or shared. */
type Mode = 'deferred' | 'immediate' | 'alongside';

/** A lock not had within lock_timeout (or a deadlock, a serialization failure): busy, on a connection that still works. */
function lockedOut(err: unknown): boolean {
  return err instanceof PgError && err.code === 'SQLITE_BUSY' && !err.connectionLost;
}

/** `q` changes nothing, and its connection was lost (or could not be made again): it may be sent again later. */
function lostRead(err: unknown, q: PgQuery): boolean {
  return err instanceof PgError && err.connectionLost && RESENDABLE.test(q.text);
}

export class PgDatabase implements Db, Inside {
  readonly turns = new Turns();
  readonly inside: Db = new TxHandle(this);
  readonly inTransaction = false;
  readonly memory = false;
  readonly backend: Backend = 'postgresql';
  open = true;
  /** The holder's clock (platform/db.ts): this process's unless its runtime gives another. */
  clock: Clock = REAL_CLOCK;
  /** A transaction is open on the connection (its statements must not be sent again elsewhere). */
  private depth = 0;
  private savepoints = 0;
  /** Statements due by the open transaction's commit (atCommit), sent with its COMMIT. */
  private closing: string[] = [];
  /** The reads every write transaction begins with (readAtBegin), by key, their values written into their text. */
  private readonly openings = new Map<string, { text: string; values: readonly unknown[]; literal: string }>();
  /** Their answers in the open transaction, until the transaction's own run of each takes it. */
  private opened: { text: string; values: readonly unknown[]; result: PgResult }[] = [];
  private readonly names = new Map<string, string>();
  /** The connection failed: the next transaction (or statement outside one) opens a new one. */
  private lost = false;
  /** A new connection being made, shared by whatever needs it meanwhile. */
  private reconnecting: Promise<void> | null = null;
  /** lock_timeout as last set (busyWait), set again on a new connection. */
  private lockTimeoutMs: number | null = null;
  /** Session settings (setSession), made again on a new connection. */
  private readonly session: string[] = [];
  /** What a statement outside a transaction does when a lock kept it past lock_timeout (waitForLocks). */
  private lockWait: ((err: unknown) => Promise<void>) | null = null;

  private readonly writerLock: number;
  private readonly version: PgSchemaOptions['version'];
  /** This connection's own row of the commit counter (alongside transactions'). */
  private readonly counterKey = crypto.randomBytes(6).toString('hex');

  private constructor(
    readonly name: string,
    /** The server's parameters, resolved once (platform/pg-params.ts): every new connection uses them. */
    readonly params: PgParams,
    private conn: PgClient,
    opts: PgSchemaOptions,
  ) {
    this.writerLock = opts.writerLock ?? WRITER_LOCK;
    this.version = opts.version;
  }

  /** Connected now: a wrong address is this call's error. */
  static async open(name: string, url: string, opts: PgSchemaOptions = {}): Promise<PgDatabase> {
    const params = pgParamsOf(url);
    return new PgDatabase(name, params, await connect(params, false), opts);
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

  /**
   * A statement of the open transaction runs in it at once. One through the connection takes a
   * turn of its own, as a transaction does: sent only between transactions, it can never land in
   * one another task of this process opened while it was on its way.
   */
  answer(q: PgQuery, inside: boolean): Promise<PgResult> {
    if (!inside) return this.outside(q);
    if (!this.turns.held) return this.turns.settle(true) as Promise<never>;
    return this.query(q);
  }

  waitForLocks(hook: ((err: unknown) => Promise<void>) | null): void {
    this.lockWait = hook;
  }

  /**
   * A statement in a turn of its own. One that another session's lock kept past lock_timeout is
   * tried again once the holder's hook says so (Db.waitForLocks), the turn let go meanwhile: it was
   * a transaction of its own, cancelled whole. So is a read whose connection was lost again after
   * query()'s one try on a new one (cut again, or the server still down past the reconnect's few
   * seconds): it changed nothing. Without the hook's wait, a storm of cuts failed a subcloud's run
   * with the server's words (its fields' read, before the driver) and ended workers with them.
   */
  private async outside(q: PgQuery): Promise<PgResult> {
    for (;;) {
      try {
        return await this.turns.hold(() => {}, () => this.query(q));
      } catch (err) {
        if (!this.lockWait || !(lockedOut(err) || lostRead(err, q))) throw err;
        await this.lockWait(err);
      }
    }
  }

  /**
   * `q` now. Outside a transaction, a read (or a session setting) whose connection was cut (the
   * server restarted, an administrator ended the session) is sent again once on a new connection:
   * it changed nothing, and a command need not fail for it. A write is not: it may have committed
   * before the connection went.
   */
  async query(q: PgQuery): Promise<PgResult> {
    if (this.depth > 0) return this.readAlready(q) ?? this.send(q);
    await this.reconnectIfLost();
    try {
      return await this.send(q);
    } catch (err) {
      if (!this.lost || !RESENDABLE.test(q.text)) throw err;
      await this.reconnectIfLost();
      return this.send(q);
    }
  }

  private async send(q: PgQuery): Promise<PgResult> {
    try {
      return (await this.conn.many([q]))[0];
    } catch (err) {
      throw this.failed(err);
    }
  }

  /** Several statements without parameters in one round trip (the simple protocol), one result each. */
  private async script(text: string): Promise<PgResult[]> {
    try {
      return await this.conn.script(text);
    } catch (err) {
      throw this.failed(err);
    }
  }

  private failed(err: unknown): unknown {
    // Closed by its holder (an apply's end, while a look of its heartbeat was still out): not a
    // lost connection, and nothing to wait for or to say.
    if (!this.open) return new PgError('the connection was closed by this process', undefined);
    if (connectionLost(err)) this.lost = true;
    return asStoreError(err);
  }

  prepare(source: string): PgStatement {
    return new PgStatement(this, source);
  }

  prepareInside(source: string): PgStatement {
    return new PgStatement(this, source, true);
  }

  /** Statements with no parameters, several at once (PostgreSQL's simple protocol); run now. */
  async exec(text: string): Promise<this> {
    await this.answer({ text }, false);
    return this;
  }

  async execInside(text: string): Promise<void> {
    await this.query({ text });
  }

  /** Outside a transaction: now. */
  async atCommit(text: string): Promise<void> {
    await this.exec(text);
  }

  /** Kept for the open transaction's COMMIT (Db.atCommit): sent with it, in its round trip. */
  async atCommitInside(text: string): Promise<void> {
    if (this.depth === 0) return void (await this.execInside(text));
    this.closing.push(text);
  }

  transaction<T>(fn: (tx: Db) => Promise<T>): Transaction<T> {
    const tx = (() => this.within('deferred', fn)) as Transaction<T>;
    tx.deferred = tx;
    tx.immediate = () => this.within('immediate', fn);
    tx.alongside = () => this.within('alongside', fn);
    return tx;
  }

  private within<R>(mode: Mode, fn: (tx: Db) => Promise<R>): Promise<R> {
    return this.turns.hold(
      () => {},
      () => this.outermost(mode, () => fn(this.inside)),
    );
  }

  async savepoint<R>(fn: () => Promise<R>): Promise<R> {
    const sp = `dcm_sp${++this.savepoints}`;
    await this.query({ text: `SAVEPOINT ${sp}` });
    // What the savepoint's body left for the commit is undone with it.
    const closingBefore = this.closing.length;
    try {
      const r = await fn();
      await this.query({ text: `RELEASE SAVEPOINT ${sp}` });
      return r;
    } catch (err) {
      this.closing.length = closingBefore;
      // Undone, unless the transaction itself failed (its connection went): then nothing is left to undo.
      if (!this.lost) await this.script(`ROLLBACK TO SAVEPOINT ${sp}; RELEASE SAVEPOINT ${sp}`);
      throw err;
    }
  }

  private async outermost<R>(mode: Mode, fn: () => Promise<R>): Promise<R> {
    await this.reconnectIfLost();
    return this.begun(mode, fn);
  }

  private async begun<R>(mode: Mode, fn: () => Promise<R>): Promise<R> {
    this.depth = 1;
    this.closing = [];
    let xid: unknown;
    try {
      if (mode !== 'deferred') {
        // One round trip. The transaction's id: should the connection go during the COMMIT, the
        // server may have committed before it went, and is asked (committedAfterAll).
        const lock = mode === 'immediate' ? 'pg_advisory_xact_lock' : 'pg_advisory_xact_lock_shared';
        const reads = [...this.openings.values()];
        const r = await this.script(`BEGIN; SELECT ${lock}(${this.writerLock}); SELECT txid_current() AS xid${reads.map((o) => `; ${o.literal}`).join('')}`);
        xid = (r[2]?.rows[0] as { xid?: unknown } | undefined)?.xid;
        this.opened = reads.map((o, i) => ({ text: o.text, values: o.values, result: r[3 + i] })).filter((o) => o.result);
      } else await this.query({ text: 'BEGIN ISOLATION LEVEL REPEATABLE READ' });
      const r = await fn();
      // What is due by the commit, the counter's move and the COMMIT in one round trip (the simple
      // protocol: no parameters).
      const bump = mode === 'deferred' || !this.version ? '' : `${mode === 'immediate' ? this.version.bump : this.version.bumpAlongside(this.counterKey)}; `;
      const before = this.closing.map((text) => `${text}; `).join('') + bump;
      try {
        if (before) await this.script(`${before}COMMIT`);
        else await this.query({ text: 'COMMIT' });
      } catch (err) {
        if (!this.lost || !(await this.committedAfterAll(xid))) throw err;
      }
      return r;
    } catch (err) {
      if (!this.lost) {
        try {
          await this.send({ text: 'ROLLBACK' });
        } catch {
          // The connection is gone: the server rolled the transaction back itself.
        }
      }
      throw err;
    } finally {
      this.depth = 0;
      this.closing = [];
      this.opened = [];
    }
  }

  /**
   * A read every write transaction of this connection begins with, under `key` (one per key),
   * sent with its BEGIN (after the writers' lock, before anything of the transaction): the
   * transaction's first run of the same statement with the same values is answered from it, with
   * no round trip of its own (a worker's fence, its batch's look at the strategy: issue 51). Its
   * columns must be named apart. Null, or a value that is neither a number nor a plain word (no
   * quoting is trusted here): none under `key`, and the transaction reads it itself. False then.
   */
  readAtBegin(key: string, text: string | null, values: readonly (string | number)[] = []): boolean {
    this.openings.delete(key);
    if (text === null) return false;
    let plain = true;
    const literal = text.replace(/\$(\d+)/g, (_, n: string) => {
      const v = values[Number(n) - 1];
      const lit = typeof v === 'number' && Number.isFinite(v) ? String(v) : typeof v === 'string' && /^[0-9A-Za-z_.:-]*$/.test(v) ? `'${v}'` : null;
      if (lit === null) plain = false;
      return lit ?? '';
    });
    if (plain) this.openings.set(key, { text, values: [...values], literal });
    return plain;
  }

  /** The answer read with the BEGIN, if `q` is one of those reads (once). */
  private readAlready(q: PgQuery): PgResult | null {
    if (this.opened.length === 0) return null;
    const at = this.opened.findIndex((o) => q.text === o.text && q.values?.length === o.values.length && o.values.every((v, i) => q.values![i] === v));
    if (at < 0) return null;
    const { result } = this.opened.splice(at, 1)[0];
    return q.array ? { rows: result.rows.map((row) => Object.values(row as object)), rowCount: result.rowCount } : result;
  }

  /**
   * The connection went during a COMMIT: whether the server committed all the same (its answer
   * was what was lost), asked on a new connection. A batch tried again after a commit it did not
   * hear of would find its own writes done, and stop the apply as if another process had made them.
   * No id read yet: nothing was committed. The question unanswered (the server still away, the new
   * connection cut too) or the transaction still `in progress` there: asked again while the
   * holder's hook waits (Db.waitForLocks: the orchestrator's busy rule, which a second Ctrl-C
   * bounds). Taken as not committed, the batch tried again stopped a worker under a storm of cut
   * connections with "history row … is not running". With no hook (a command): not committed.
   */
  private async committedAfterAll(xid: unknown): Promise<boolean> {
    if (xid === undefined || xid === null) return false;
    for (;;) {
      let unknown: unknown;
      try {
        this.depth = 0;
        await this.reconnectIfLost();
        const status = (await this.send({ text: 'SELECT txid_status($1)', values: [xid], array: true })).rows[0] as unknown[] | undefined;
        if (status?.[0] !== 'in progress') return status?.[0] === 'committed';
        unknown = new PgError('the outcome of a COMMIT whose answer was lost is not known yet', 'SQLITE_BUSY');
      } catch (err) {
        unknown = err;
      }
      if (!this.lockWait || (unknown as { code?: string }).code !== 'SQLITE_BUSY') return false;
      await this.lockWait(unknown);
    }
  }

  /** PostgreSQL's lock_timeout, set again on every new connection. */
  async busyWait(ms: number): Promise<void> {
    // SQLite's 0 is no wait at all; PostgreSQL's 0 is a wait without end: 1 ms is its least.
    const lockTimeoutMs = Math.max(1, Math.floor(ms));
    await this.answer({ text: `SET lock_timeout = ${lockTimeoutMs}` }, false);
    this.lockTimeoutMs = lockTimeoutMs;
  }

  /**
   * The schema's commit counter (PgSchemaOptions.version), which moves with every writer's commit,
   * this connection's own included (SQLite's data_version leaves those out: here a reader may look
   * once more than it needs).
   */
  async commitCount(): Promise<number> {
    if (!this.version) throw new PgError('a commit count needs a commit counter (PgSchemaOptions.version)', undefined);
    const rows = (await this.answer({ text: this.version.read, array: true }, false)).rows as number[][];
    return rows[0]?.[0] ?? 0;
  }

  /** A file's settings and checks have no meaning on a server: the store never asks it for one. */
  async pragma(text: string): Promise<unknown> {
    return this.pragmaInside(text);
  }

  async pragmaInside(text: string): Promise<unknown> {
    throw new PgError(`PRAGMA ${text}: a PostgreSQL database has none`, undefined);
  }

  /**
   * Only between transactions: a transaction whose connection failed has failed (the server rolled
   * it back), and none of its statements may run on another connection, outside it.
   */
  private async reconnectIfLost(): Promise<void> {
    while (this.reconnecting) await this.reconnecting;
    if (!this.lost || !this.open) return;
    this.reconnecting = this.reconnect().finally(() => (this.reconnecting = null));
    await this.reconnecting;
  }

  private async reconnect(): Promise<void> {
    this.conn.close();
    let conn: PgClient;
    try {
      conn = await connect(this.params, true);
    } catch (err) {
      // Still unreachable after a few seconds: this try fails as busy, and the next one connects again.
      throw asStoreError(err);
    }
    try {
      if (this.lockTimeoutMs !== null) await conn.query(`SET lock_timeout = ${this.lockTimeoutMs}`);
      for (const text of this.session) await conn.query(text);
    } catch (err) {
      conn.close();
      throw asStoreError(err);
    }
    if (!this.open) conn.close();
    this.conn = conn;
    this.lost = false;
  }

  /**
   * A setting of the session (`SET search_path TO …`), made now and again on every new connection:
   * one made once would be lost with the first (a server restart, a cut), and the statements
   * after it would run without it.
   */
  async setSession(text: string): Promise<void> {
    await this.answer({ text }, false);
    this.session.push(text);
  }

  close(): void {
    if (this.open) {
      this.open = false;
      this.conn.close();
    }
  }
}
