/**
 * Every write of the orchestrator goes through here (SPEC §2.1, issue "one commit path"): a
 * `BEGIN IMMEDIATE` transaction with the fence first, counted, and one busy rule for all of them
 * — while another writer holds the file past the busy timeout, wait, say so once, and try again; a
 * busy file never ends an apply. Nothing else in the orchestrator opens a transaction.
 *
 * The test hooks (./test-hooks.ts) act here, at the Nth commit: every commit is a crash point and
 * a busy point that a test can name.
 */
import { setBusyWait, type Db } from '../store/open.js';
import { faultOf } from '../store/faults.js';
import type { Transition } from '../domain/transition.js';
import { TransitionWriter } from '../store/transitions.js';
import type { CommitHooks, CostCounters } from './runtime.js';
import { sleepOn } from '../platform/timers.js';
import type { TimeSource } from '../platform/runtime.js';
import { DcmError, EXIT } from '../domain/errors.js';

/**
 * After a second Ctrl-C the store stayed locked past the bound: the end of the apply was not
 * written. What was not committed is what a kill leaves, which the next apply resumes.
 */
export class StoreStayedBusy extends DcmError {
  readonly code = 'DCM_STORE_BUSY';
  constructor(signal: NodeJS.Signals) {
    super(
      'the database stayed locked by another process: the end of this apply was not written; `dcm strategy apply` resumes',
      signal === 'SIGTERM' ? EXIT.sigterm : EXIT.sigint,
    );
  }
}

/** How long each statement waits for another writer after a second Ctrl-C (the bound is the whole wait's). */
const LAST_WRITES_BUSY_MS = 500;

/** How often a busy file is tried again. */
export const BUSY_RETRY_MS = 250;

export class Committer {
  private readonly writer: TransitionWriter;
  private busySaid = false;
  /** Commits made so far (the hooks' N counts from 1). */
  private count = 0;

  /** Returns the steps a batch leaves out, if any (TransitionWriter's guard). */
  private readonly fence: (tx: Db) => Promise<ReadonlySet<number> | void>;

  constructor(
    private readonly db: Db,
    type: string,
    fence: (tx: Db) => Promise<ReadonlySet<number> | void>,
    private readonly warn: (text: string) => void,
    private readonly hooks: CommitHooks | null = null,
    private readonly counters: CostCounters | null = null,
    private readonly rt: TimeSource,
    /** After a batch's writes, in its transaction (TransitionWriter's `after`). */
    after?: (tx: Db, written: readonly Transition[]) => Promise<void>,
  ) {
    // The fence opens every transaction of the orchestrator: where a test hook acts inside one.
    this.fence = hooks
      ? async (tx) => {
          const left = await fence(tx);
          await hooks.inCommit(this.count + 1, tx);
          return left;
        }
      : fence;
    this.writer = new TransitionWriter(db, type, this.fence, after);
  }

  /**
   * One attempt: `batch` (transitions) and `also` (other writes of the same turn) in one fenced
   * transaction. Throws what SQLite throws, SQLITE_BUSY included: nothing of it was committed,
   * and the caller keeps it for the next attempt.
   */
  async tryCommit(batch: Transition[], also?: (tx: Db) => Promise<void>, check?: (tx: Db) => Promise<ReadonlySet<number> | void>): Promise<void> {
    await this.hooks?.beforeCommit(this.count + 1);
    if (batch.length) await this.writer.commit(batch, also, check);
    else if (also) return void (await this.tryWrite(also));
    else return;
    if (this.counters) this.counters.transitions += batch.length;
    await this.committed();
  }

  /** One attempt at a fenced read-modify-write (`fn` writes through `tx`, the transaction's handle); throws on a busy file. */
  async tryWrite<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    await this.hooks?.beforeCommit(this.count + 1);
    const out = await this.db
      .transaction(async (tx) => {
        await this.fence(tx);
        return fn(tx);
      })
      .immediate();
    await this.committed();
    return out;
  }

  /**
   * A write that must happen: tried until the file is not busy any more, or, once `giveUpAt` is
   * set (a second Ctrl-C), until then: a busy store then ends the apply with what a kill leaves.
   */
  async write<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await this.tryWrite(fn);
      } catch (err) {
        await this.waitBusy(err);
      }
    }
  }

  /**
   * The one busy rule, for a write above and for a read that another session's lock kept waiting
   * (a server's LOCK TABLE blocks reads too: Db.waitForLocks): `err` not busy is thrown back; busy,
   * it is said once and waited out a little, or, past a second Ctrl-C's bound, ends the apply with
   * what a kill leaves (StoreStayedBusy).
   */
  async waitBusy(err: unknown): Promise<void> {
    if (!this.isBusy(err)) throw err;
    if (this.giveUpAt !== null && this.rt.clock.mono() >= this.giveUpAt) throw new StoreStayedBusy(this.signal);
    await sleepOn(this.rt.timers, BUSY_RETRY_MS);
  }

  private giveUpAt: number | null = null;
  private signal: NodeJS.Signals = 'SIGINT';

  /** A second signal: writes wait for a busy store until `atMs` (the runtime's monotonic clock) at the latest (the earliest bound said holds). */
  async stopWaiting(atMs: number, signal: NodeJS.Signals): Promise<void> {
    if (this.giveUpAt !== null && this.giveUpAt <= atMs) return;
    this.giveUpAt = atMs;
    this.signal = signal;
    await setBusyWait(this.db, LAST_WRITES_BUSY_MS);
  }

  /** Whether `err` is a busy file; said once per apply on stderr. */
  isBusy(err: unknown): boolean {
    if (faultOf(err) !== 'busy') return false;
    // A server's lost connection is busy to the store (nothing of the try was committed), but an
    // operator reading "locked by another process" after a server restart would look for one.
    if ((err as { connectionLost?: boolean }).connectionLost) this.sayLost();
    else this.sayBusy();
    return true;
  }

  private lostSaid = false;

  private sayLost(): void {
    if (this.lostSaid) return;
    this.lostSaid = true;
    this.warn('the connection to the database server was lost: connecting again (nothing is lost meanwhile)');
  }

  sayBusy(): void {
    if (this.busySaid) return;
    this.busySaid = true;
    this.warn('the database is locked by another process: waiting for it (nothing is lost meanwhile)');
  }

  private async committed(): Promise<void> {
    this.count++;
    await this.hooks?.afterCommit(this.count);
  }
}

/** A commit found the strategy paused or aborted in the store before the poll did: rolled back. */
export class StopInFile extends Error {
  constructor() {
    super('a stop in the file, not seen yet');
  }
}
