/**
 * The orchestrator's writes. Every step change is a guarded update (`… WHERE id = ? AND state = ?`):
 * `changes === 1` is the compare-and-swap, and a stale writer learns it changed nothing.
 */
import type { Db } from './open.js';
import type { RunResult, Statement } from '../platform/db.js';
import { now } from './clock.js';
import { idsIn } from './statements.js';
import { SYNC_COLUMN, updateSubcloud } from './subclouds.js';
import type { Endpoint } from '../domain/types.js';
import { NEXT_ATTEMPT, type Transition } from '../domain/transition.js';
import { DurationTally } from '../domain/estimate.js';
import { recordDurations } from './durations.js';
import { visible } from '../domain/outside-text.js';

export const DETAILS_MAX = 1000;

/**
 * Details as the record keeps them: a driver's words are escaped already (drivers/visible.ts);
 * whatever else reaches a step's details is escaped here too, and cut to DETAILS_MAX.
 */
export function recordText(details: string): string {
  return visible(details, DETAILS_MAX);
}

/** A guarded update matched no row: the step is not in the state this writer believed. */
export class StaleStepError extends Error {
  readonly code = 'DCM_STALE_STEP';
}

const staleStep = (cloud: string, what: string) =>
  new StaleStepError(`step of ${cloud} ${what}: it was changed by another process; stopped, the strategy stays applying`);

export interface ApplyStep {
  id: number;
  subcloudId: number;
  cloud: string;
  stage: number;
  state: string;
  attempt: number;
}

/**
 * Runs left `running` by a process that died are `interrupted`: they will run again as the next
 * attempt. Returns how many there were.
 */
export async function interruptRunning(db: Db, details = 'the orchestrator stopped while this operation ran', keep: readonly number[] = []): Promise<number> {
  return (await db
    .prepare(
      `UPDATE step_history SET outcome = 'interrupted', finished_at = $1, details = $2
       WHERE outcome = 'running' AND id NOT IN (${idsIn(db, '$3')})`,
    )
    .run(now(db), details, JSON.stringify(keep))).changes;
}

/** The runs this process started and stopped waiting for (a second Ctrl-C): `interrupted`. */
export async function interruptRuns(db: Db, historyIds: readonly number[], details: string): Promise<number> {
  const stmt = db.prepare(`UPDATE step_history SET outcome = 'interrupted', finished_at = $1, details = $2 WHERE id = $3 AND outcome = 'running'`);
  const at = now(db);
  let n = 0;
  for (const id of historyIds) n += (await stmt.run(at, details, id)).changes;
  return n;
}

export type { Transition } from '../domain/transition.js';

/** What a completed step makes of its subcloud's row: its endpoint in-sync (prestage: its status complete). */
export const completionSet = (e: Endpoint | null): string => (e === null ? `prestage_status = 'complete'` : `${SYNC_COLUMN[e]} = 'in-sync'`);

/**
 * A backend's own way to make a batch's writes (PostgreSQL's: store/pg/transitions.ts), one result
 * per transition in the batch's order; a file writes row by row (`TransitionWriter.apply`). It
 * numbers the runs started as the next attempt itself (NEXT_ATTEMPT: as `numberAttempts` would,
 * and writes the number into the transition).
 */
export type BatchWrites = (db: Db, batch: readonly Transition[], at: string) => Promise<Written[]>;

const batchWrites = new WeakMap<object, BatchWrites>();

/** The backend that opened `db` makes its batches' writes with `writes`. */
export function useBatchWrites(db: Db, writes: BatchWrites): void {
  batchWrites.set(db, writes);
}

/** `db` writes its batches as `like` does (a connection wrapped by the simulator keeps its server's way). */
export function batchWritesAs(db: Db, like: Db): void {
  const writes = batchWrites.get(like);
  if (writes) batchWrites.set(db, writes);
}

export class TransitionWriter {
  private readonly update;
  private readonly dataVersion;
  private readonly outSteps;
  /** Subclouds of steps still to run that are taken out (issue 49), as read at `outVersion`. */
  private outs = new Map<number, string>();
  private outVersion = -1;
  private readonly closeRun;
  private readonly openRun;
  private readonly lastAttempts;
  private readonly sync: Map<Endpoint | null, Statement>;
  /**
   * Commit `batch` in one transaction; `before` runs first inside it (other writes of the same
   * turn); `check`, after the writer's guard, is this commit's own (it may leave steps out too).
   */
  readonly commit: (batch: Transition[], before?: (tx: Db) => Promise<void>, check?: (tx: Db) => Promise<ReadonlySet<number> | void>) => Promise<void>;

  /**
   * `type`: the strategy type whose duration statistics ok runs are added to (none without it).
   * `guard` runs first in every commit's transaction: the orchestrator's fence (SPEC §2.1). It
   * may name steps whose transitions the batch leaves out (claims another worker won, a full
   * window): the rest is written, in the same transaction.
   */
  constructor(
    private readonly db: Db,
    type?: string,
    guard: (tx: Db) => Promise<ReadonlySet<number> | void> = async () => {},
    /** After the batch's writes, in its transaction: what they opened is known (the start rate's last start). */
    after?: (tx: Db, written: readonly Transition[]) => Promise<void>,
  ) {
    // Prepared once, run only inside the batches' transactions: on the connection's handle for them.
    const inside = db.inside;
    this.update = inside.prepare(
      // Positional (to, details, attempt, now, ended, now, now, id, from): binding by name looks
      // every parameter up on an object, once per transition.
      `UPDATE strategy_step SET state = $1, details = $2, attempt = COALESCE($3, attempt),
         started_at = COALESCE(started_at, $4), finished_at = CASE WHEN $5 THEN $6 ELSE NULL END, updated_at = $7
       WHERE id = $8 AND state = $9`,
    );
    this.dataVersion = inside.prepare('PRAGMA data_version').pluck();
    this.outSteps = inside.prepare(
      `SELECT strategy_step.subcloud_id, ${siteOut('strategy_step')} AS out FROM strategy_step
       WHERE strategy_step.state NOT IN ('complete', 'failed', 'aborted') AND ${siteOut('strategy_step')} IS NOT NULL`,
    ).raw();
    this.closeRun = inside.prepare(
      `UPDATE step_history SET outcome = $1, finished_at = $2, details = $3, retry_at = $4 WHERE id = $5 AND outcome = 'running'`,
    );
    this.openRun = inside.prepare(
      `INSERT INTO step_history (step_id, state, attempt, started_at, outcome) VALUES ($1, $2, $3, $4, 'running')`,
    );
    this.lastAttempts = inside
      .prepare(`SELECT step_id, state, max(attempt) FROM step_history WHERE step_id IN (${idsIn(db, '$1')}) GROUP BY step_id, state`)
      .raw();
    this.sync = new Map();
    for (const e of [null, ...(Object.keys(SYNC_COLUMN) as Endpoint[])]) {
      this.sync.set(e, inside.prepare(`UPDATE subcloud SET ${completionSet(e)}, updated_at = $1 WHERE id = $2`));
    }
    const writeBatch = batchWrites.get(db);
    const write = async (tx: Db, all: Transition[], before?: (tx: Db) => Promise<void>, check?: (tx: Db) => Promise<ReadonlySet<number> | void>): Promise<void> => {
      const left = await guard(tx);
      const out = await check?.(tx);
      const batch = left?.size || out?.size ? all.filter((t) => !left?.has(t.stepId) && !out?.has(t.stepId)) : all;
      await before?.(tx);
      // Every write of the batch first, then what each one changed (on PostgreSQL the backend's
      // few statements over arrays: store/pg/transitions.ts); a stale step rolls the batch back.
      if (!writeBatch) await this.numberAttempts(batch);
      if (!writeBatch) await this.readOuts(batch);
      let written: Written[];
      if (writeBatch) written = await writeBatch(tx, batch, now(db));
      else {
        written = [];
        for (const t of batch) written.push(await this.apply(tx, t));
      }
      for (let i = 0; i < batch.length; i++) this.verify(batch[i], written[i]);
      await after?.(tx, batch);
      // One upsert per state per batch, in the batch's own transaction.
      if (type === undefined) return;
      const tally = new DurationTally();
      for (const t of batch) {
        if (t.close?.outcome === 'ok' && t.close.durationMs !== undefined) tally.add(t.from, t.close.durationMs);
      }
      await recordDurations(tx, type, tally);
    };
    this.commit = async (batch, before, check) => {
      try {
        // Beside other workers' batches on a server: a batch writes the steps its worker holds,
        // and what it shares it locks row by row (platform/pg-database.ts).
        await db.transaction((tx) => write(tx, batch, before, check)).alongside();
      } catch (err) {
        // Rolled back: the history rows it opened do not exist; a retry opens them anew.
        for (const t of batch) t.historyId = undefined;
        throw (await this.explain(err, batch));
      }
    };
  }

  /**
   * A run opened for a step that already has one `running` is refused by the database itself
   * (one running operation per step, a unique index), before the batch's checks are reached: said
   * as what it is, a step another process changed, read after the rollback.
   */
  private async explain(err: unknown, batch: readonly Transition[]): Promise<unknown> {
    if ((err as { code?: string })?.code !== 'SQLITE_CONSTRAINT_UNIQUE') return err;
    const stateOf = this.db.prepare('SELECT state FROM strategy_step WHERE id = $1').pluck();
    const running = this.db.prepare(`SELECT 1 FROM step_history WHERE step_id = $1 AND outcome = 'running'`).pluck();
    for (const t of batch) {
      if (t.startAttempt === undefined) continue;
      if ((await stateOf.get(t.stepId)) !== t.from) return staleStep(t.cloud, `is no longer in state ${t.from}`);
      if (!t.close && (await running.get(t.stepId)) !== undefined) return staleStep(t.cloud, 'already has an operation running');
    }
    return err;
  }

  /**
   * Issue 49: a subcloud unmanaged or set offline while the strategy applies is kept out from its
   * next state on. Only another connection changes a subcloud while the orchestrator runs, and
   * SQLite's data_version moves only when another connection commits: the subclouds of steps still
   * to run that are out are read again (one statement) only then, in the batch's own transaction,
   * so what it starts is judged on the file as it is now. No statement per transition: a check in
   * each step's update cost figure 1 3 % of its CPU (RETURNING) or 1 % (a WHERE), BENCHMARKS.md.
   */
  private async readOuts(batch: readonly Transition[]): Promise<void> {
    if (!batch.some((t) => t.startAttempt !== undefined)) return;
    const version = (await this.dataVersion.get()) as number;
    if (version === this.outVersion) return;
    this.outs = new Map((await this.outSteps.all()) as [number, string][]);
    this.outVersion = version;
  }

  /**
   * The runs the batch starts as the next attempt get their number: one after the history's last
   * run of that step and state, read for the whole batch at once in its own transaction (a
   * rolled-back batch reads them again to the same numbers: the rows it opened are gone with it).
   */
  private async numberAttempts(batch: Transition[]): Promise<void> {
    const ids = new Set<number>();
    for (const t of batch) if (t.startAttempt === NEXT_ATTEMPT) ids.add(t.stepId);
    if (ids.size === 0) return;
    const last = new Map<string, number>();
    for (const [id, state, n] of (await this.lastAttempts.all(JSON.stringify([...ids]))) as [number, string, number][]) last.set(`${id}\n${state}`, n);
    // In batch order, as if each start read the history after the writes before it: a second
    // start of the same step and state in one batch follows the first.
    for (const t of batch) {
      if (t.startAttempt === undefined) continue;
      const key = `${t.stepId}\n${t.to}`;
      const before = last.get(key) ?? 0;
      if (t.startAttempt === NEXT_ATTEMPT) t.startAttempt = before + 1;
      last.set(key, Math.max(before, t.startAttempt));
    }
  }

  private async apply(tx: Db, t: Transition): Promise<Written> {
    const at = now(tx);
    const c = t.close;
    // Sent together and awaited once (a file's path only: a server writes its batch its own way).
    // Each runs as it is called, in this order; an await each was a promise and a resumed frame
    // per statement, figure 1's garbage (BENCHMARKS.md).
    const [closed, moved, opened] = await Promise.all([
      c ? this.closeRun.run(c.outcome, c.finishedAt, recordText(c.details), c.retryAt ?? null, c.historyId) : undefined,
      this.update.run(t.to, recordText(t.details), t.startAttempt ?? null, at, t.ended ? 1 : 0, at, at, t.stepId, t.from),
      t.startAttempt !== undefined ? this.openRun.run(t.stepId, t.to, t.startAttempt, at) : undefined,
      t.completes ? this.sync.get(t.completes.endpoint)!.run(at, t.subcloudId) : undefined,
    ]);
    // The site's own word, after what completion assumes: the inventory follows what it reports.
    if (t.observed) {
      const o = t.observed;
      await updateSubcloud(tx, t.subcloudId, { software_version: o.software_version, availability: o.availability, sync: o.sync });
    }
    // Taken out (issue 49): the step moves and its run is opened all the same, to fail at once
    // saying why (launch.ts), so that `strategy retry` takes it up at this state.
    return { closed, updated: moved, opened, out: t.startAttempt === undefined ? null : (this.outs.get(t.subcloudId) ?? null) };
  }

  /** What the transition's writes changed: exactly its run and its step, or the batch is stale. */
  private verify(t: Transition, w: Written): void {
    if (w.closed && w.closed.changes !== 1) throw new Error(`history row ${t.close!.historyId} of ${t.cloud} is not running`);
    if (w.updated.changes !== 1) {
      // Someone else changed the step: stop rather than run a state twice. Nothing of this batch
      // is committed, and the strategy stays `applying` for `dcm strategy apply` to resume.
      throw staleStep(t.cloud, `is no longer in state ${t.from}`);
    }
    if (w.opened) t.historyId = Number(w.opened.lastInsertRowid);
    // Unmanaged or offline as its operation starts: it is not started (launch.ts, issue 49).
    if (w.out) t.siteOut = w.out;
  }
}

/** What one write changed (better-sqlite3's run result, or a backend's batch's word for one row). */

/** The results of one transition's writes, read once the batch's writes are all made. */
export interface Written {
  closed: RunResult | undefined;
  updated: RunResult;
  opened: RunResult | undefined;
  /** The step's subcloud was taken out (siteOut), for a transition that starts an operation. */
  out?: string | null;
}

/**
 * Issue 49: a subcloud unmanaged or set offline while the strategy applies is kept out from its
 * next state on. Read in the statement that moves the step (no statement of its own), over the
 * step's subcloud by its key: its words, or null while it is managed and online.
 */
export const siteOut = (step: string): string => `(SELECT CASE WHEN sc.management <> 'managed' AND sc.availability <> 'online' THEN 'unmanaged and offline'
    WHEN sc.management <> 'managed' THEN 'unmanaged' WHEN sc.availability <> 'online' THEN 'offline' END
  FROM subcloud sc WHERE sc.id = ${step}.subcloud_id)`;

/** Steps in `state`, which run nothing, become `aborted` with these details (abort); returns how many. */
export async function abortStepsIn(db: Db, state: 'initial' | 'deferred', details: string): Promise<number> {
  const at = now(db);
  return (await db
    .prepare(`UPDATE strategy_step SET state = 'aborted', details = $1, finished_at = $2, updated_at = $3 WHERE state = $4`)
    .run(details, at, at, state)).changes;
}

/** Steps never started become `aborted` (abort); returns how many. */
export const abortInitialSteps = (db: Db): Promise<number> => abortStepsIn(db, 'initial', 'aborted before start');

/**
 * Steps caught mid-state by an abort with no orchestrator running: aborted, naming the state;
 * but those in `keep` (a run of theirs still lives: the next apply adopts it).
 */
export async function abortMidStateSteps(db: Db, keep: readonly number[] = []): Promise<number> {
  const at = now(db);
  return (await db
    .prepare(
      `UPDATE strategy_step SET details = 'aborted in state ' || state, state = 'aborted', finished_at = $1, updated_at = $2
       WHERE state NOT IN ('initial', 'complete', 'failed', 'aborted') AND id NOT IN (${idsIn(db, '$3')})`,
    )
    .run(at, at, JSON.stringify(keep))).changes;
}

/**
 * Steps left mid-state with nothing of theirs running (their runs were cut off, or never started),
 * when an apply takes up an abort: aborted, naming the state, never run again by it. A step held
 * by a live worker of the strategy (several hosts; it may be waiting out a backoff) is its own.
 */
export async function abortStrandedSteps(db: Db): Promise<number> {
  const at = now(db);
  return (await db
    .prepare(
      `UPDATE strategy_step SET details = 'aborted in state ' || state, state = 'aborted', finished_at = $1, updated_at = $2
       WHERE state NOT IN ('initial', 'complete', 'failed', 'aborted')
         AND NOT EXISTS (SELECT 1 FROM step_history h WHERE h.step_id = strategy_step.id AND h.outcome = 'running')
         AND (owner IS NULL OR NOT EXISTS (SELECT 1 FROM apply_worker w WHERE w.id = strategy_step.owner))`,
    )
    .run(at, at)).changes;
}

export async function countStepStates(db: Db): Promise<Record<string, number>> {
  const rows = await db.prepare('SELECT state, count(*) AS n FROM strategy_step GROUP BY state').all() as {
    state: string;
    n: number;
  }[];
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

/**
 * Steps left mid-state when a run ends failed with nothing in flight: those put back by `strategy
 * retry` that the failure budget kept from starting again. They are failed again, saying why, so
 * that a later `retry` finds them.
 */
export async function failLeftSteps(db: Db, why: string): Promise<number> {
  const at = now(db);
  return (await db
    .prepare(
      `UPDATE strategy_step SET details = state || ': ' || $1, state = 'failed', finished_at = $2, updated_at = $3
       WHERE state NOT IN ('initial', 'complete', 'failed', 'aborted')`,
    )
    .run(why, at, at)).changes;
}
