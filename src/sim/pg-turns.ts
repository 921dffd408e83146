/**
 * On a PostgreSQL server, the order in which dcm's sessions reach it, drawn from the schedule's
 * seed (platform/pg-client.ts's QueryScheduler). Every query of every simulated process asks for its
 * turn; between two events of the world (loop.ts), the queries asked are let through one at a
 * time, each chosen by the seed among those waiting, and the next goes once the last has its answer
 * or waits on the server for another session's lock. So sessions interleave on the server (a
 * transaction's statements and another's, a read between two writes), in an order a seed replays,
 * and no session is held behind one that waits for it.
 *
 * A COMMIT of a host's worker may also be made to lose its answer (the fault `commit-lost`): the
 * server commits, the connection goes before dcm hears so, and dcm must find out how it ended. The
 * first answer to its question (`txid_status`, on a new connection) is lost with its connection
 * too: dcm must ask again, not take the commit for one that did not happen.
 */
import { pgQueriesOut, type PgClient, type QueryScheduler } from '../platform/pg-client.js';
import type { Prng } from './prng.js';

/** The real event loop's next turn, whatever the simulator does with time. */
const realTurn = () => new Promise<void>((r) => setImmediate(r));
const realPause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Asked {
  conn: PgClient;
  go: () => void;
}

export class SeededQueries implements QueryScheduler {
  private readonly waiting: Asked[] = [];
  private readonly out = new Set<PgClient>();
  /** Hosts whose next COMMIT loses its answer. */
  private readonly losing = new Set<string>();
  /** Hosts whose next question about a COMMIT's outcome loses its answer too. */
  private readonly asking = new Set<string>();
  /** Queries let through, and those found waiting on another session's lock (the summary's counts). */
  sent = 0;
  blocked = 0;

  /** Waits between tries to connect again: on the world's clock (the loop's). */
  pause?: (ms: number) => Promise<void>;
  now?: () => number;

  constructor(
    private readonly prng: Prng,
    /** The server's word on which of these backends wait for a lock. */
    private readonly waitingOnLocks: (pids: number[]) => Promise<number>,
    /** The host a connection belongs to (its application_name: store.ts addressOf). */
    private readonly hostOf: (conn: PgClient) => string | null,
    /** The connection that asks the server what sessions wait for: never watched itself. */
    private readonly isAdmin: (conn: PgClient) => boolean,
  ) {}

  turn(conn: PgClient): Promise<void> {
    // The world's own sessions (the judge, the sites' book, the operator's commands, the server's
    // admin) go at once: they are not dcm's processes', and the turns are given out by one of them.
    // They are watched all the same: one that waits on a lock (another session's LOCK TABLE, a
    // frozen worker's transaction) must not keep virtual time from moving on to what releases it.
    if (this.hostOf(conn) === null) {
      if (!this.isAdmin(conn)) this.out.add(conn);
      return Promise.resolve();
    }
    return new Promise<void>((go) => this.waiting.push({ conn, go }));
  }

  done(conn: PgClient): void {
    this.out.delete(conn);
  }

  lose(conn: PgClient, text: string): boolean {
    const host = this.hostOf(conn);
    if (host === null) return false;
    if (this.asking.has(host) && /\btxid_status\(/.test(text)) return this.asking.delete(host);
    if (!this.losing.has(host) || !/(^|;)\s*COMMIT\s*$/i.test(text)) return false;
    this.losing.delete(host);
    this.asking.add(host);
    return true;
  }

  /** Host `host`'s next COMMIT loses its answer. */
  loseNextCommit(host: string): void {
    this.losing.add(host);
  }

  /**
   * The world's settle (loop.ts settleExtra): every query asked let through, one at a time, until
   * none is left that could still be answered, and no connection is being made (pg-client.ts
   * counts those with the queries out).
   */
  async settle(): Promise<void> {
    for (;;) {
      await realTurn();
      if (this.out.size && !(await this.allHeld())) continue;
      if (this.waiting.length) {
        const next = this.waiting.splice(this.prng.int(0, this.waiting.length - 1), 1)[0];
        this.out.add(next.conn);
        this.sent++;
        next.go();
        continue;
      }
      // Nothing waits for its turn: done once what is out is only what waits on a lock.
      if (pgQueriesOut() <= this.out.size) return;
      await realPause(1);
    }
  }

  /** Every query out waits on the server for another session's lock (or has its answer by now). */
  private async allHeld(): Promise<boolean> {
    await realPause(1);
    if (this.out.size === 0) return true;
    const pids = [...this.out].map((c) => c.backendPid).filter((p): p is number => p !== undefined);
    if (pids.length < this.out.size) return false;
    const held = await this.waitingOnLocks(pids);
    if (held < this.out.size) return false;
    this.blocked++;
    return true;
  }
}
