/**
 * The store a schedule runs on: a SQLite file (in memory where the system has it), or, with
 * `--db postgresql://…`, a database of its own on that server, created for the schedule and dropped
 * after it. dcm's code reaches either only as it always does (openDb on an address); what this
 * module owns is the rest: making and removing it, another session holding its writers' lock (a
 * busy store), and cutting dcm's sessions (a lost connection, a server restart as a client sees it).
 *
 * The world's own sessions (the sites' book of their runs, the judge's reads, the holder of a busy
 * store) are named, and a cut spares them: what it tests is dcm's way back, not the judge's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { PgClient, scheduleQueries } from '../platform/pg-client.js';
import { SeededQueries } from './pg-turns.js';
import { keyedPrng } from './prng.js';
import { WRITER_LOCK } from '../platform/pg-database.js';
import { openDb } from '../store/open.js';

export interface SimStore {
  /** The address dcm's simulated processes and commands open (their `--db`). */
  readonly address: string;
  /** The address the world's own sessions open: spared by a cut. */
  readonly worldAddress: string;
  readonly server: boolean;
  /** A folder of the schedule's own, for its files (the exec config). */
  readonly scratch: string;
  /** The address a process of `host` opens: its sessions are told apart by the server. */
  addressOf(host: string): string;
  /**
   * Another session takes the writers' lock (`table`: on a server, LOCK TABLE on the steps, as an
   * operator's psql might); the function returned lets it go.
   */
  holdWriters(table: boolean): Promise<() => Promise<void>>;
  /** Every session of dcm's (`host`: that host's only) is ended by the server (none on a file: a file has no connection to lose). */
  cutSessions(host: string | null): Promise<void>;
  /**
   * Resolves once no query to the server is out that could still be answered, nor asked in what
   * the answers set going: virtual time may move on (loop.ts). A server answers in real time; a
   * clock moved meanwhile would make a query take virtual time (a lease lapse while its heartbeat is
   * on the wire). Null on a file, whose statements answer at once.
   */
  readonly answered: (() => Promise<void>) | null;
  /** A server's: host `host`'s next COMMIT loses its answer with its connection. */
  loseNextCommit(host: string): void;
  /** A server's: the world's time, for the processes' waits to connect again. */
  onTime?(time: { pause(ms: number): Promise<void>; now(): number }): void;
  dispose(): Promise<void>;
}

const WORLD = 'dcm-sim-world';
/** The simulator's own session on the server's database, for making and dropping the schedules'. */
const ADMIN = 'dcm-sim-admin';
/** What a simulated host's sessions are named on the server (store.ts addressOf). */
const HOST_APP = 'dcm-host-';

export function simStore(server: string | undefined, seed = 0): Promise<SimStore> {
  return server ? serverStore(server, seed) : fileStore();
}

/**
 * An empty dcm file with its schema, made once per thread: each schedule starts from a copy of it,
 * not from the schema's migrations (a tenth of a small schedule's cost).
 */
let template: string | null = null;

async function emptyFile(base: string): Promise<string> {
  if (template && fs.existsSync(template)) return template;
  const dir = fs.mkdtempSync(path.join(base, 'dcm-sim-template-'));
  const file = path.join(dir, 'empty.db');
  (await openDb(file, { create: true }))!.close();
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return (template = file);
}

async function fileStore(): Promise<SimStore> {
  // In memory where the system has it: the sim's cost is its commits, not the disk's.
  const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  const dir = fs.mkdtempSync(path.join(base, 'dcm-sim-'));
  const file = path.join(dir, 'sim.db');
  fs.copyFileSync(await emptyFile(base), file);
  return {
    address: file,
    worldAddress: file,
    server: false,
    scratch: dir,
    addressOf: () => file,
    answered: null,
    loseNextCommit: () => {},
    async holdWriters() {
      const other = new Database(file);
      other.exec('BEGIN IMMEDIATE');
      return async () => {
        other.exec('COMMIT');
        other.close();
      };
    },
    cutSessions: async () => {},
    dispose: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** One session per thread on the server's own database, for creating and dropping the schedules'. */
let admin: { server: string; conn: PgClient } | null = null;
let made = 0;

async function asAdmin(server: string, text: string, values?: unknown[]): Promise<unknown[]> {
  if (admin?.server !== server) {
    admin?.conn.close();
    admin = { server, conn: await PgClient.connect(`${server}${server.includes('?') ? '&' : '?'}application_name=${ADMIN}`) };
  }
  return (await admin.conn.query(text, values)).rows;
}

/** `url` naming the database `name` (the rest of the address, its query included, as it was). */
function naming(url: string, name: string, query = ''): string {
  const m = /^(postgres(?:ql)?:\/\/[^/?#]*)(\/[^?#]*)?(\?[^#]*)?$/i.exec(url);
  if (!m) throw new Error(`--db ${url} is not a postgresql:// address`);
  const q = [m[3]?.slice(1), query].filter(Boolean).join('&');
  return `${m[1]}/${name}${q ? `?${q}` : ''}`;
}

async function serverStore(server: string, seed: number): Promise<SimStore> {
  // Unique across the simulator's threads and runs; not in the trace (nothing prints the address).
  const name = `dcm_sim_${process.pid}_${threadId}_${++made}`;
  await asAdmin(server, `CREATE DATABASE ${name}`);
  // The processes' queries reach the server one at a time, in an order the seed draws: their
  // sessions interleave there, and a seed replays its schedule.
  const turns = new SeededQueries(
    keyedPrng(seed, 'postgresql'),
    async (pids) => Number(((await asAdmin(server, `SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ANY($1) AND wait_event_type = 'Lock'`, [pids])) as { n: number }[])[0].n),
    (conn) => (conn.applicationName?.startsWith(HOST_APP) ? conn.applicationName.slice(HOST_APP.length) : null),
    (conn) => conn.applicationName === ADMIN,
  );
  scheduleQueries(turns);
  const address = naming(server, name);
  const worldAddress = naming(server, name, `application_name=${WORLD}`);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-sim-'));
  return {
    address,
    worldAddress,
    server: true,
    scratch,
    answered: () => turns.settle(),
    onTime: (time) => {
      turns.pause = time.pause;
      turns.now = time.now;
    },
    loseNextCommit: (host) => turns.loseNextCommit(host),
    addressOf: (host) => naming(server, name, `application_name=${HOST_APP}${host}`),
    async holdWriters(table) {
      const other = await PgClient.connect(worldAddress);
      // A session that is not dcm's may sit in its transaction (dcm's are ended after 5 s idle).
      await other.query('SET idle_in_transaction_session_timeout = 0');
      await other.many([{ text: 'BEGIN' }, table ? { text: 'LOCK TABLE strategy_step IN ACCESS EXCLUSIVE MODE' } : { text: 'SELECT pg_advisory_xact_lock($1)', values: [WRITER_LOCK] }]);
      return async () => {
        await other.query('COMMIT');
        other.close();
      };
    },
    async cutSessions(host) {
      // Each waited for (up to 5 s) until its session is gone: the next statement meets the cut.
      await asAdmin(
        server,
        `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2 AND pid <> pg_backend_pid()
           AND ($3::text IS NULL OR application_name = $3)`,
        [name, WORLD, host === null ? null : `${HOST_APP}${host}`],
      );
    },
    async dispose() {
      scheduleQueries(null);
      fs.rmSync(scratch, { recursive: true, force: true });
      await asAdmin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
