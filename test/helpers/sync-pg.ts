/**
 * A synchronous PostgreSQL connection, for the tests' own looks and set-up (creating databases,
 * another session holding a lock, a digest of what a database holds) where a test's helper is
 * synchronous. dcm itself never uses it (its store is asynchronous: src/platform/pg-client.ts).
 * The connection lives in a worker thread running node-postgres; the caller blocks on a shared
 * word until the worker has answered, then takes the answer off the port.
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { requireCjs } from '../../src/platform/cjs.js';
import { IDLE_IN_TRANSACTION_MS, PgError, type PgQuery, type PgResult } from '../../src/platform/pg-client.js';

export { connectionLost, PgError } from '../../src/platform/pg-client.js';

// The worker's code. It is CommonJS evaluated from a string, so that it runs the same from the
// built files and under the test runner's TypeScript transform; `pg` is required by the absolute
// path resolved here. int8 (count(*), sum) and numeric come back as numbers, and booleans as 1 or
// 0, as SQLite gives them.
const WORKER = `
const { workerData } = require('node:worker_threads');
const { port, flag, url } = workerData;
function answer(msg) {
  port.postMessage(msg);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}
function failure(err) {
  return { error: { message: String(err.message).split('\\n')[0], code: err.code } };
}
// node-postgres 8 treats sslmode=prefer, require and verify-ca as verify-full (it checks the
// server's certificate and name: stricter than libpq, as the README says) and warns so, in nine
// lines on stderr, on every command: that one warning is dropped; any other is Node's to print.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const text = typeof warning === 'string' ? warning : (warning && warning.message) || '';
  if (text.startsWith("SECURITY WARNING: The SSL modes 'prefer', 'require', and 'verify-ca'")) return;
  return emitWarning.call(process, warning, ...rest);
};
try {
  serve(require(workerData.pg));
} catch (err) {
  // The client cannot even load: that is every request's answer, not a caller left waiting.
  port.on('message', () => answer(failure(err)));
}
function serve(pg) {
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));
pg.types.setTypeParser(16, (v) => (v === 't' ? 1 : 0));
const client = new pg.Client(url ? { connectionString: url } : {});
let broken = null;
client.on('error', (err) => { broken = err; });
// A connection that fails is every request's answer, never an unhandled rejection.
// A transaction left open by a process that stopped (SIGSTOP, a frozen host) would hold its
// locks, the writers' one among them, for ever: the server ends such a session instead.
const ready = client
  .connect()
  .then(() => client.query('SET client_min_messages = warning; SET idle_in_transaction_session_timeout = ' + workerData.idleMs))
  .catch((err) => { broken = err; });
port.on('message', async (req) => {
  if (req.close) {
    await client.end().catch(() => {});
    answer({ results: [] });
    port.close();
    return;
  }
  try {
    await ready;
    if (broken) throw broken;
    const results = [];
    for (const q of req.queries) {
      const r = await client.query({ name: q.name, text: q.text, values: q.values, rowMode: q.array ? 'array' : undefined });
      results.push({ rows: r.rows, rowCount: r.rowCount ?? 0 });
    }
    answer({ results });
  } catch (err) {
    answer(failure(err));
  }
});
}
`;

/** Milliseconds on the machine's monotonic clock (a virtual clock may be installed over Date). */
function blockingClockMs(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

export class SyncPg {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private closed = false;

  constructor(
    url: string | undefined,
    private readonly timeoutMs = 60_000,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(WORKER, {
      eval: true,
      workerData: { port: port2, flag: this.flag, url, pg: requireCjs.resolve('pg'), idleMs: IDLE_IN_TRANSACTION_MS },
      transferList: [port2],
    });
    // The worker must not keep a finished command alive, nor its port.
    this.worker.unref();
    // Its failures reach the caller as answers; an 'error' event left unheard would end the process.
    this.worker.on('error', () => {});
    this.port.unref();
    // Connect now: a wrong address is the first query's error, and leaves no thread behind.
    try {
      this.many([{ text: 'SELECT 1' }]);
    } catch (err) {
      this.closed = true;
      void this.worker.terminate();
      throw err;
    }
  }

  query(text: string, values?: readonly unknown[], array = false): PgResult {
    return this.many([{ text, values, array }])[0];
  }

  /** Several queries in one round trip to the worker, in order; the first failure stops the rest. */
  many(queries: readonly PgQuery[]): PgResult[] {
    if (this.closed) throw new PgError('the PostgreSQL connection is closed', undefined);
    const reply = this.call({ queries: queries.map((q) => ({ ...q, values: q.values ? [...q.values] : undefined })) });
    if (reply.error) throw new PgError(reply.error.message, reply.error.code);
    return reply.results;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.call({ close: true }, 5_000);
    } catch {
      // Closing a connection that is already gone.
    }
    void this.worker.terminate();
  }

  private call(req: object, timeoutMs = this.timeoutMs): { results: PgResult[]; error?: { message: string; code?: string } } {
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(req);
    const deadline = blockingClockMs() + timeoutMs;
    for (;;) {
      const left = deadline - blockingClockMs();
      if (left <= 0 || Atomics.wait(this.flag, 0, 0, Math.min(left, 1000)) === 'timed-out') {
        const msg = receiveMessageOnPort(this.port);
        if (msg) return msg.message;
        if (blockingClockMs() >= deadline) {
          this.closed = true;
          void this.worker.terminate();
          throw new PgError(`PostgreSQL did not answer within ${Math.round(timeoutMs / 1000)} s`, undefined);
        }
        continue;
      }
      const msg = receiveMessageOnPort(this.port);
      if (msg) return msg.message;
    }
  }
}
