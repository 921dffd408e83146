/**
 * One PostgreSQL connection (node-postgres' Client, in this thread), answering each query with a
 * promise: while the server makes dcm wait (another session holds the writers' lock, a slow
 * network), the event loop goes on — Ctrl-C, driver answers, heartbeats on their own connection.
 *
 * Its rows are as SQLite gives them: int8 (count(*), sum) and numeric as numbers, booleans as 1 or
 * 0. It never keeps a finished process alive: its socket holds the event loop only while a query
 * is out, as a file's handle never does. A server that does not answer at all (stopped, cut off by
 * the network) costs the query `ANSWER_MS`, then the connection.
 */
import type { Client, ClientConfig, QueryArrayConfig, QueryResult } from 'pg';
import type { Socket } from 'node:net';
import { requireCjs } from './cjs.js';
import { pgClientConfig, pgParamsOf, type PgParams } from './pg-params.js';

export interface PgQuery {
  text: string;
  values?: readonly unknown[];
  /** Rows as arrays of column values, in the order of the select list. */
  array?: boolean;
  /** A server-side prepared statement's name: parsed once per connection, then only bound. */
  name?: string;
}

export interface PgResult {
  rows: unknown[];
  rowCount: number;
}

/** What the server (or the connection) said, with PostgreSQL's SQLSTATE as `code` when it has one. */
export class PgError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    /** The connection is gone (connectionLost), whatever code the store gives the error. */
    readonly connectionLost = false,
  ) {
    super(message);
    this.name = 'PgError';
  }
}

/**
 * How long the server lets a session sit in a transaction with no statement running. A dcm
 * transaction waits only on the server and on its own process's other work between statements,
 * so only a stopped process leaves one open that long; its locks then go before a writer waiting
 * for them gives up (busy_timeout, 10 s).
 */
export const IDLE_IN_TRANSACTION_MS = 5_000;

/** How long a query may go unanswered before its connection is given up as lost. */
export const ANSWER_MS = 60_000;

/**
 * The connection is gone (the server ended the session, restarted, or cannot be reached): a new
 * one may work where this one cannot. SQLSTATE class 08, the server's shutdowns, the idle
 * transaction's end; node's socket errors; the client's own words for a closed connection.
 */
export function connectionLost(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  const code = e?.code ?? '';
  if (code.startsWith('08') || ['57P01', '57P02', '57P03', '25P03', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOENT', 'ETIMEDOUT'].includes(code)) return true;
  return /Connection terminated|connection error and is not queryable|not queryable|did not answer within|is closed/i.test(e?.message ?? '');
}

type Pg = typeof import('pg');
let loaded: Pg | null = null;

/** node-postgres, loaded on the first connection: a file's commands never pay for it. */
function pgModule(): Pg {
  if (loaded) return loaded;
  // node-postgres 8 treats sslmode=prefer, require and verify-ca as verify-full (it checks the
  // server's certificate and name: stricter than libpq, as the README says) and warns so, in nine
  // lines on stderr, on every command: that one warning is dropped; any other is Node's to print.
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message ?? '';
    if (text.startsWith("SECURITY WARNING: The SSL modes 'prefer', 'require', and 'verify-ca'")) return;
    return (emitWarning as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  return (loaded = requireCjs('pg') as Pg);
}

/** SQLite's shapes for the types whose text node-postgres would give as it is. */
function types(pg: Pg): ClientConfig['types'] {
  const parse = (oid: number): ((v: string) => unknown) | null =>
    oid === 20 || oid === 1700 ? Number : oid === 16 ? (v) => (v === 't' ? 1 : 0) : null;
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => parse(oid) ?? pg.types.getTypeParser(oid, format)) as never,
  };
}

/** Round trips to a server made by this process, every connection's (a query or a script each). */
let trips = 0;

/** How many round trips this process has made to PostgreSQL servers (a cost counter: DCM_COUNTERS). */
export function pgRoundTrips(): number {
  return trips;
}

/** Queries out (sent, or waiting for their turn) on any connection of this process. */
let out = 0;
let quiet: (() => void)[] = [];

export function pgQueriesOut(): number {
  return out;
}

/** Resolves once no query of this process is out. */
export function pgQuiet(): Promise<void> {
  return out === 0 ? Promise.resolve() : new Promise((r) => quiet.push(r));
}

function begun(): void {
  out++;
}

function ended(): void {
  if (--out > 0) return;
  const waiting = quiet;
  quiet = [];
  for (const r of waiting) r();
}

/**
 * When each query of this process is sent, decided by someone else: the simulator's (src/sim),
 * which lets one query at a time reach the server, chosen by its seed among those waiting, so that
 * dcm's sessions interleave on the server in an order a seed replays (a query the server holds
 * behind another session's lock lets the next one go). Null: every query goes as it is asked.
 */
export interface QueryScheduler {
  /** Resolves when `conn` may send its next query (`text`, for what it is). */
  turn(conn: PgClient, text: string): Promise<void>;
  /** Its answer (or its error) has come. */
  done(conn: PgClient): void;
  /** Before the answer is given: true makes it lost with its connection (a COMMIT of unknown outcome). */
  lose?(conn: PgClient, text: string): boolean;
  /** A wait between two tries to connect again, and the time it is judged by: the simulator's own. */
  pause?(ms: number): Promise<void>;
  now?(): number;
}

let scheduler: QueryScheduler | null = null;

/** The simulator's scheduler of this process's queries (null: none, the default). */
export function scheduleQueries(s: QueryScheduler | null): void {
  scheduler = s;
}

/** The scheduler set (pg-connection.ts waits between tries to connect again on its time). */
export function queryScheduler(): QueryScheduler | null {
  return scheduler;
}

export class PgClient {
  private closed = false;
  private busy = 0;
  private last: Promise<unknown> = Promise.resolve();
  /** Why the connection went, once it has: every later query's error. */
  private broken: Error | null = null;

  private constructor(private readonly client: Client) {}

  /**
   * A connection, made now: a wrong address is this call's error. `to`: an address, or its
   * parameters as resolved (platform/pg-params.ts): node-postgres is given every one of them.
   */
  static async connect(to: string | PgParams): Promise<PgClient> {
    const pg = pgModule();
    let params: PgParams;
    try {
      params = typeof to === 'string' ? pgParamsOf(to) : to;
    } catch (err) {
      throw asPgError(err);
    }
    const client = new pg.Client({ ...pgClientConfig(params), types: types(pg), connectionTimeoutMillis: ANSWER_MS });
    const c: PgClient = new PgClient(client);
    // A connection that fails later is the next query's error, never an unhandled 'error' event.
    client.on('error', (err) => (c.broken ??= err));
    begun();
    try {
      await client.connect();
      // A transaction left open by a process that stopped (SIGSTOP, a frozen host) would hold its
      // locks, the writers' one among them, for ever: the server ends such a session instead.
      await client.query(`SET client_min_messages = warning; SET idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_MS}`);
    } catch (err) {
      c.closed = true;
      client.end().catch(() => {});
      throw refused(asPgError(err), params);
    } finally {
      ended();
    }
    c.socket()?.unref();
    return c;
  }

  async query(text: string, values?: readonly unknown[], array = false): Promise<PgResult> {
    return (await this.many([{ text, values, array }]))[0];
  }

  /** The application_name this connection gave the server (the simulator tells its hosts' sessions apart by it). */
  get applicationName(): string | undefined {
    return (this.client as unknown as { connectionParameters?: { application_name?: string } }).connectionParameters?.application_name;
  }

  /** The server's process for this connection (the simulator asks the server what it waits for). */
  get backendPid(): number | undefined {
    return (this.client as unknown as { processID?: number }).processID;
  }

  /** The results of a simple query (no parameters) of several statements, one per statement. */
  async script(text: string): Promise<PgResult[]> {
    const r = (await this.run(() => this.client.query(text), text)) as QueryResult | QueryResult[];
    return (Array.isArray(r) ? r : [r]).map((x) => ({ rows: x.rows, rowCount: x.rowCount ?? 0 }));
  }

  /** Queries in order; the first failure stops the rest. */
  async many(queries: readonly PgQuery[]): Promise<PgResult[]> {
    const results: PgResult[] = [];
    for (const q of queries) {
      const config = { name: q.name, text: q.text, values: q.values ? [...q.values] : undefined, ...(q.array ? { rowMode: 'array' as const } : {}) };
      const r: QueryResult = await this.run(() => this.client.query(config as QueryArrayConfig) as Promise<QueryResult>, q.text);
      results.push({ rows: r.rows, rowCount: r.rowCount ?? 0 });
    }
    return results;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.end().catch(() => {});
  }

  private socket(): Socket | undefined {
    return (this.client as unknown as { connection?: { stream?: Socket } }).connection?.stream;
  }

  private async run<R>(send: () => Promise<R>, text: string): Promise<R> {
    if (this.closed) throw new PgError('the PostgreSQL connection is closed', undefined, true);
    begun();
    try {
      return await this.inOrder(() => (scheduler ? this.scheduled(scheduler, send, text) : this.answered(send)));
    } finally {
      ended();
    }
  }

  /** `send` when the scheduler says, its answer told to it (or lost with the connection, if it says so). */
  private async scheduled<R>(s: QueryScheduler, send: () => Promise<R>, text: string): Promise<R> {
    await s.turn(this, text);
    try {
      const r = await this.answered(send);
      if (s.lose?.(this, text)) {
        this.socket()?.destroy();
        throw new PgError('Connection terminated unexpectedly', undefined, true);
      }
      return r;
    } finally {
      s.done(this);
    }
  }

  /** One query at a time on the connection (node-postgres would queue them, but deprecates being asked to). */
  private inOrder<R>(fn: () => Promise<R>): Promise<R> {
    const r = this.last.then(fn, fn);
    this.last = r.catch(() => {});
    return r;
  }

  private async answered<R>(send: () => Promise<R>): Promise<R> {
    if (this.broken) throw asPgError(this.broken);
    trips++;
    if (this.busy++ === 0) this.socket()?.ref();
    let silent = false;
    const timer = setTimeout(() => {
      // Nothing at all for that long: the connection is given up (every query on it fails).
      silent = true;
      this.socket()?.destroy();
    }, ANSWER_MS);
    timer.unref?.();
    try {
      return await send();
    } catch (err) {
      if (silent) throw new PgError(`PostgreSQL did not answer within ${ANSWER_MS / 1000} s`, undefined, true);
      throw asPgError(err);
    } finally {
      clearTimeout(timer);
      if (--this.busy === 0) this.socket()?.unref();
    }
  }
}

/** A password the server refused says where it came from, as libpq's message does for a password file's. */
function refused(err: PgError, params: PgParams): PgError {
  if (err.code !== '28P01' || params.password === null) return err;
  return new PgError(`${err.message} (the password from ${params.source})`, err.code, err.connectionLost);
}

/** node-postgres' error as a PgError: its first line, and its SQLSTATE (or socket code). */
function asPgError(err: unknown): PgError {
  if (err instanceof PgError) return err;
  const e = err as { message?: string; code?: string };
  return new PgError(String(e?.message ?? err).split('\n')[0], e?.code, connectionLost(err));
}
