/**
 * Several orchestrators on one strategy (a PostgreSQL store): the workers' rows and the steps they
 * claim. A worker is a row of apply_worker holding a lease (its heartbeat, renewed well within
 * `lease_ms`); a step it claims names it (`owner`) and counts its claims (`fence`, handed to the
 * step's runs as part of DCM_FENCE). Every statement here runs inside a writer's transaction. On
 * PostgreSQL a worker's batches run beside the other workers' (alongside: platform/pg-database.ts):
 * each worker claims within its own share of the window (sharesOfWindow), which another's claims
 * never use, and a step only while nobody else holds it (the claim's own guard); where the shares
 * cannot keep the window, a lock of the claims' own (lockClaims) makes one transaction's counts and
 * claims see every other's. A join, a takeover and a leave hold the writers' lock whole, so the
 * workers a batch reads stay as they are to its end.
 *
 * A step is in flight while a live worker owns it and it is mid-state (not initial, not ended, not
 * waiting as deferred): what the stage's window counts, across all workers.
 */
import type { Db } from './open.js';
import { idsIn, sql } from './statements.js';
import { now } from './clock.js';
import { isPgUrl } from '../domain/db-url.js';

export interface WorkerRow {
  id: number;
  host: string;
  pid: number;
  proc_start: string | null;
  token: string;
  started_at: string;
  heartbeat_at: string;
  heartbeat_ms: number;
  lease_ms: number;
  max_local: number | null;
}

export interface NewWorker {
  host: string;
  pid: number;
  procStart: string | null;
  token: string;
  leaseMs: number;
  maxLocal: number | null;
}

/** The states in which a step holds a slot: what the windows count. */
const IN_FLIGHT = `st.state NOT IN ('initial', 'complete', 'failed', 'aborted', 'deferred')`;
/** The step's owner is a worker that still holds its row. */
const LIVE_OWNER = `EXISTS (SELECT 1 FROM apply_worker w WHERE w.id = st.owner)`;

const COLUMNS = 'id, host, pid, proc_start, token, started_at, heartbeat_at, heartbeat_ms, lease_ms, max_local';

/**
 * The clock leases are judged by (ms): the database server's, one clock for workers on every host,
 * so that a host whose own clock is off neither takes a live worker over nor keeps a dead one. A
 * file has one host, and its clock. The simulator's runtime stands in for a server's clock
 * (`clock.server`: its hours of virtual leases would otherwise be judged by the few real seconds
 * they take).
 */
export async function storeClockMs(db: Db): Promise<number> {
  if (db.clock.server) return db.clock.server();
  if (!isPgUrl(db.name)) return db.clock.wall();
  return Number(await sql(db, 'SELECT CAST(extract(epoch FROM clock_timestamp()) * 1000 AS bigint)').pluck().get());
}

export async function addWorker(db: Db, w: NewWorker): Promise<number> {
  const at = now(db);
  return (await sql(
    db,
    `INSERT INTO apply_worker (host, pid, proc_start, token, started_at, heartbeat_at, heartbeat_ms, lease_ms, max_local)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
  )
    .pluck()
    .get(w.host, w.pid, w.procStart, w.token, at, at, await storeClockMs(db), w.leaseMs, w.maxLocal)) as number;
}

export async function listWorkers(db: Db): Promise<WorkerRow[]> {
  return (await sql(db, `SELECT ${COLUMNS} FROM apply_worker ORDER BY id`).all()) as WorkerRow[];
}

/** The fence of a worker's transaction: true while its row is there, with its token. */
export async function holdsWorker(db: Db, id: number, token: string): Promise<boolean> {
  return (await sql(db, HOLDS_WORKER).pluck().get(id, token)) !== undefined;
}

const HOLDS_WORKER = 'SELECT 1 FROM apply_worker WHERE id = $1 AND token = $2';

/**
 * Every write transaction of `db` (a worker's connection) reads its fence with its BEGIN, where a
 * server answers it in the same round trip (platform/db.ts readAtBegin): read after the writers'
 * lock, as the fence itself is, and a worker's row changes only under that lock whole, so the
 * answer is the one the fence would have had. Null: the worker has left.
 */
export function fenceAtBegin(db: Db, worker: { id: number; token: string } | null): void {
  db.readAtBegin?.('fence', worker ? HOLDS_WORKER : null, worker ? [worker.id, worker.token] : []);
}

/** Renew the lease; false once the row is gone (another worker took this one's subclouds over). */
export async function beatWorker(db: Db, id: number, token: string): Promise<boolean> {
  return (await sql(db, 'UPDATE apply_worker SET heartbeat_at = $1, heartbeat_ms = $2 WHERE id = $3 AND token = $4').run(now(db), await storeClockMs(db), id, token)).changes === 1;
}

/**
 * A worker leaves, having waited for every run it started to be gone: a run its history still
 * calls `running` (it stopped on a fault before it could say) is closed interrupted, to run again
 * as the next attempt; then the worker goes.
 */
export async function leaveWorker(db: Db, id: number): Promise<void> {
  await interruptRunsOf(db, id, 'its worker stopped while this operation ran');
  await removeWorker(db, id);
}

/** Close the `running` operations of the steps worker `id` holds as interrupted; how many. */
async function interruptRunsOf(db: Db, id: number, details: string): Promise<number> {
  return (await sql(
    db,
    `UPDATE step_history SET outcome = 'interrupted', finished_at = $1, details = $2
     WHERE outcome = 'running' AND step_id IN (SELECT id FROM strategy_step WHERE owner = $3)`,
  ).run(now(db), details, id)).changes;
}

/** A worker leaves (or is taken over): its row goes, and the steps it held that have not ended are nobody's. */
export async function removeWorker(db: Db, id: number): Promise<void> {
  await sql(db, `UPDATE strategy_step SET owner = NULL WHERE owner = $1 AND state NOT IN ('complete', 'failed', 'aborted')`).run(id);
  await sql(db, 'DELETE FROM apply_worker WHERE id = $1').run(id);
}

/**
 * A worker that is gone, taken over by `taker`. Its runs still `running` are either kept for the
 * taker to adopt (`adopt`: the taker is on the same host, where their processes can be seen and
 * waited for, or its driver's runs tell their ends to the store from their own host), their steps
 * then the taker's with a new fence, as a claim gives; or closed as interrupted (another host,
 * and nothing can tell how they end), to run again as their next attempt.
 * Returns how many of each; null when the worker renewed its lease since `gone` was read.
 */
export async function takeOver(db: Db, gone: WorkerRow, taker: number, adopt: boolean, reason: string): Promise<{ adopted: number; interrupted: number } | null> {
  // First, and only as it was read: a renewal takes no lock (it never waits behind a writer), so
  // one may have landed since; then the worker is alive, and nothing of it is touched.
  if ((await sql(db, 'DELETE FROM apply_worker WHERE id = $1 AND heartbeat_ms = $2').run(gone.id, gone.heartbeat_ms)).changes === 0) return null;
  let adopted = 0;
  let interrupted = 0;
  if (adopt) {
    // A run whose process was not recorded yet ran (or was starting) on the gone worker's host.
    await sql(
      db,
      `UPDATE step_history SET host = $1 WHERE outcome = 'running' AND host IS NULL AND step_id IN (SELECT id FROM strategy_step WHERE owner = $2)`,
    ).run(gone.host, gone.id);
    adopted = (await sql(
      db,
      `UPDATE strategy_step SET owner = $1, fence = fence + 1 WHERE owner = $2 AND EXISTS (SELECT 1 FROM step_history h WHERE h.step_id = strategy_step.id AND h.outcome = 'running')`,
    ).run(taker, gone.id)).changes;
  } else {
    interrupted = await interruptRunsOf(db, gone.id, reason);
  }
  await removeWorker(db, gone.id);
  return { adopted, interrupted };
}

/** The fences of steps this worker holds without having claimed them here (adopted): its next runs carry them. */
export async function stepFences(db: Db, ids: readonly number[]): Promise<Map<number, number>> {
  if (ids.length === 0) return new Map();
  const rows = await sql(db, `SELECT id, fence FROM strategy_step WHERE id IN (${idsIn(db, '$1')})`).all(JSON.stringify(ids)) as { id: number; fence: number }[];
  return new Map(rows.map((r) => [r.id, r.fence]));
}

/** A worker as the window's split sees it: its row's id, and its `--max-local` (null: none). */
export interface ShareOf {
  id: number;
  cap: number | null;
}

/**
 * Each worker's share of a window: a capped worker its cap (at most the window); the uncapped
 * split what the capped leave, the first joined (the lowest ids) taking one more each until the
 * remainder is spent, and each at least one. The shares add up to the window whenever they can
 * (the caps leave at least one for each uncapped worker): then a worker that keeps within its own
 * share keeps the window, with no lock shared with the others (claimSteps). A share only spreads
 * the work otherwise: the window itself is counted apart, under the claims' lock.
 */
export function sharesOfWindow(window: number, workers: readonly ShareOf[]): Map<number, number> {
  const capped = workers.reduce<number>((sum, w) => sum + (w.cap === null ? 0 : Math.min(w.cap, window)), 0);
  const uncapped = [...workers].filter((w) => w.cap === null).sort((a, b) => a.id - b.id);
  const left = Math.max(0, window - capped);
  const each = uncapped.length ? Math.floor(left / uncapped.length) : 0;
  const shares = new Map<number, number>();
  for (const w of workers) if (w.cap !== null) shares.set(w.id, Math.min(w.cap, window));
  uncapped.forEach((w, rank) => shares.set(w.id, Math.max(1, each + (rank < left - each * uncapped.length ? 1 : 0))));
  return shares;
}

/** Worker `me`'s share of the window among `workers` (sharesOfWindow); one alone takes it all. */
export function shareOfWindow(window: number, workers: readonly ShareOf[], me: number): number {
  return sharesOfWindow(window, workers).get(me) ?? Math.max(1, window);
}

/** "DCMC": the lock a transaction that claims steps holds to its end, on a server (lockClaims). */
export const CLAIMS_LOCK = 0x44434d43;

/**
 * The claims of one transaction see every earlier claim and none between, where the workers'
 * shares cannot keep the window by themselves (caps that add up past it) and for the start rate's
 * last start: on a server, where workers' batches run side by side, a claiming one takes this lock
 * before it reads them, and holds it to its commit. It comes before any lock of a row another
 * worker writes, so two such transactions never wait for each other in a circle. A file has one
 * writer at a time already (false: nothing to take).
 */
export async function lockClaims(db: Db): Promise<boolean> {
  if (db.backend !== 'postgresql') return false;
  await sql(db, `SELECT pg_advisory_xact_lock(${CLAIMS_LOCK})`).get();
  return true;
}

/** What a worker asks to claim: a step as it last read it. */
export interface ClaimAsk {
  id: number;
  stage: number;
  state: string;
}

/**
 * Why a claim was refused: another worker has the step (or it moved on), no slot is free, or the
 * start rate lets no more subclouds start now (they wait in their place).
 */
export type Refusal = 'taken' | 'full' | 'rate';

/**
 * Claim steps for worker `me` in this transaction, in the order asked: each is granted while its
 * stage's window (across all workers) and this worker's cap (`maxLocal`, else its share of the
 * window among the workers) have room. The granted are written; the caller leaves the refused
 * out of the batch it writes in the same transaction, so that a batch's transitions and its
 * claims commit together. Returns each granted step's new fence.
 */
export async function claimSteps(
  db: Db,
  me: number,
  maxLocal: number | null,
  asks: readonly ClaimAsk[],
  /**
   * The start rate (store/start-rate.ts): of the steps `ids` (first starts), at most `max` are
   * granted, in order, those taken by another worker passed over: a worker behind the others in
   * the stage's order still makes the start the rate allows rather than ask for steps already gone.
   */
  firstLimit?: { ids: ReadonlySet<number>; max: number },
  /**
   * By stage, this worker's steps that leave flight in the same transaction (their ends, written
   * after the claims): their slots are counted free, so that the next subcloud takes one in the
   * commit that ends the last (a batch that fails to write one rolls the claims back with it).
   */
  ending: ReadonlyMap<number, number> = new Map(),
): Promise<{ granted: Map<number, number>; refused: Map<number, Refusal>; workers?: ShareOf[] }> {
  const refused = new Map<number, Refusal>();
  const granted = new Map<number, number>();
  if (asks.length === 0) return { granted, refused };
  // The steps asked for and the first stage's counts, in one statement (one round trip on a server).
  const first = asks[0].stage;
  const both = await sql(
    db,
    `SELECT 1 AS kind, st.id, st.state, st.owner, st.fence, ${LIVE_OWNER} AS live, NULL AS cap, NULL AS n, NULL AS size
       FROM strategy_step st WHERE st.id IN (${idsIn(db, '$1')})
     UNION ALL
     SELECT 2, c.id, NULL, NULL, NULL, NULL, c.cap, c.n, c.size FROM (${STAGE_COUNTS('$2', '$3')}) c`,
  ).all(JSON.stringify(asks.map((a) => a.id)), first, first) as ({ kind: 1; id: number; state: string; owner: number | null; fence: number; live: number | boolean } | ({ kind: 2 } & StageCount))[];
  const byId = new Map(both.filter((r) => r.kind === 1).map((r) => [r.id, r]));
  let firstCounts: StageCount[] | null = both.filter((r) => r.kind === 2).sort((a, b) => a.id - b.id);
  const room = new Map<number, { free: number; mine: number; cap: number }>();
  /** The workers the shares were judged among, when read: the caller's window follows them. */
  let workers: ShareOf[] | undefined;
  let locked = false;
  const roomOf = async (stage: number) => {
    let r = room.get(stage);
    if (r) return r;
    let counts = stage === first && firstCounts ? firstCounts : await stageCounts(db, stage);
    firstCounts = null;
    workers = counts.map((w) => ({ id: w.id, cap: w.cap }));
    const window = counts[0]?.size ?? 1;
    const shares = sharesOfWindow(window, workers);
    // The shares add up to the window (issue 51): each worker keeps within its own, and another
    // worker's claims meanwhile only fill its own share. A worker over its share (the workers
    // changed since it claimed) holds what it has and claims nothing; the others leave its part
    // to it. Otherwise (caps that add up past the window) the window is counted whole, one claiming
    // commit at a time.
    const split = [...shares.values()].reduce((a, b) => a + b, 0) <= window;
    if (!split && !locked) {
      await lockClaims(db);
      locked = true;
      counts = await stageCounts(db, stage);
    }
    const mine = (counts.find((w) => w.id === me)?.n ?? 0) - (ending.get(stage) ?? 0);
    const others = counts.reduce((sum, w) => (w.id === me ? sum : sum + (split ? Math.max(w.n, shares.get(w.id) ?? 0) : w.n)), 0);
    // Without a cap of its own a worker takes its share of the window, so that every worker runs
    // some of the fleet rather than the first to refill taking it all.
    const cap = maxLocal ?? shares.get(me) ?? window;
    room.set(stage, (r = { free: window - others - mine, mine, cap }));
    return r;
  };
  for (const a of asks) {
    const row = byId.get(a.id);
    const live = row ? row.live === true || row.live === 1 : false;
    if (!row || row.state !== a.state || (row.owner !== null && row.owner !== me && live)) {
      refused.set(a.id, 'taken');
      continue;
    }
    if (firstLimit?.ids.has(a.id) && firstLimit.max <= 0) {
      refused.set(a.id, 'rate');
      continue;
    }
    const r = await roomOf(a.stage);
    // A step of this worker's already counted (caught mid-state, put back by a takeover) takes no second slot.
    const counted = row.owner === me && a.state !== 'initial' && a.state !== 'deferred' ? 1 : 0;
    if (r.free + counted <= 0 || r.mine - counted >= r.cap) {
      refused.set(a.id, 'full');
      continue;
    }
    r.free -= 1 - counted;
    r.mine += 1 - counted;
    granted.set(a.id, row.fence + 1);
    if (firstLimit?.ids.has(a.id)) firstLimit = { ids: firstLimit.ids, max: firstLimit.max - 1 };
  }
  if (granted.size === 0) return { granted, refused, workers };
  // Only a step still nobody's (or this worker's, or a gone one's): without the claims' lock,
  // another worker may have claimed it since the read, and its claim stands (a server re-reads a
  // row another transaction changed before it updates it).
  const claimed = await sql(
    db,
    `UPDATE strategy_step AS st SET owner = $1, fence = fence + 1 WHERE st.id IN (${idsIn(db, '$2')})
       AND (st.owner IS NULL OR st.owner = $3 OR NOT ${LIVE_OWNER}) RETURNING id`,
  ).pluck().all(me, JSON.stringify([...granted.keys()]), me) as number[];
  if (claimed.length < granted.size) {
    const won = new Set(claimed.map(Number));
    for (const id of granted.keys()) {
      if (won.has(id)) continue;
      granted.delete(id);
      refused.set(id, 'taken');
    }
  }
  return { granted, refused, workers };
}

interface StageCount {
  id: number;
  cap: number | null;
  n: number;
  size: number | null;
}

/** Each worker's steps in flight in the stage (`$a`, `$b`: its number twice), its cap, and the stage's window: one row per worker, by id. */
const STAGE_COUNTS = (a: string, b: string) => `SELECT w.id, w.max_local AS cap, coalesce(c.n, 0) AS n, (SELECT max_parallel FROM strategy_stage WHERE stage = ${a}) AS size
     FROM apply_worker w LEFT JOIN (
       SELECT st.owner, count(*) AS n FROM strategy_step st WHERE st.stage = ${b} AND st.owner IS NOT NULL AND ${IN_FLIGHT} GROUP BY st.owner
     ) c ON c.owner = w.id ORDER BY w.id`;

async function stageCounts(db: Db, stage: number): Promise<StageCount[]> {
  return await sql(db, STAGE_COUNTS('$1', '$2')).all(stage, stage) as StageCount[];
}

/** Steps of the stage in flight with other live workers, and whether the stage has any step not ended. */
export async function stageElsewhere(db: Db, me: number, stage: number): Promise<{ othersInFlight: number; open: number }> {
  return (await sql(
    db,
    `SELECT coalesce(sum(CASE WHEN st.owner IS NOT NULL AND st.owner != $1 AND ${IN_FLIGHT} AND ${LIVE_OWNER} THEN 1 ELSE 0 END), 0) AS "othersInFlight",
            coalesce(sum(CASE WHEN st.state NOT IN ('complete', 'failed', 'aborted') THEN 1 ELSE 0 END), 0) AS open
     FROM strategy_step st WHERE st.stage = $2`,
  ).get(me, stage)) as { othersInFlight: number; open: number };
}

/** Steps in flight with other live workers, in any stage (the strategy ends once there are none). */
export async function inFlightElsewhere(db: Db, me: number): Promise<number> {
  return (await sql(
    db,
    `SELECT count(*) FROM strategy_step st WHERE st.owner IS NOT NULL AND st.owner != $1 AND st.state NOT IN ('complete', 'failed', 'aborted') AND ${LIVE_OWNER}`,
  )
    .pluck()
    .get(me)) as number;
}

/** The worker that runs the stage gates: the longest joined of those still there. */
export async function leadWorker(db: Db): Promise<number | null> {
  return (await sql(db, 'SELECT min(id) FROM apply_worker').pluck().get() as number | null) ?? null;
}

/** Each worker as `strategy status` shows it: its subclouds in flight and those it ended. */
export interface WorkerStatus {
  host: string;
  pid: number;
  heartbeatMs: number;
  leaseMs: number;
  inFlight: number;
  done: number;
}

export async function workerStatuses(db: Db): Promise<WorkerStatus[]> {
  return (await sql(
    db,
    `SELECT w.host, w.pid, w.heartbeat_ms AS "heartbeatMs", w.lease_ms AS "leaseMs",
            (SELECT count(*) FROM strategy_step st WHERE st.owner = w.id AND ${IN_FLIGHT}) AS "inFlight",
            (SELECT count(*) FROM strategy_step st WHERE st.owner = w.id AND st.state IN ('complete', 'failed', 'aborted')) AS done
     FROM apply_worker w ORDER BY w.id`,
  ).all()) as WorkerStatus[];
}
