/**
 * Runs in the step history as the exec driver needs them: the process of a run, runs left
 * `running` by an orchestrator that is gone, and what a run's command may name of its subcloud.
 */
import { DEFERRED_RUN_PREFIX } from './deferrals.js';
import type { Db } from './open.js';
import { idsIn, sql } from './statements.js';
import { UNKNOWN_PREFIX } from './steps.js';
import { recordEvent } from './events.js';
import { EVENTS } from '../domain/events.js';
import type { Actor } from '../platform/who.js';
import { now, parseTime } from './clock.js';
import type { RunProcess } from '../platform/proc.js';

export interface LeftRunRow {
  historyId: number;
  stepId: number;
  cloud: string;
  state: string;
  attempt: number;
  startedAt: string;
  proc: RunProcess | null;
  /** The host that started it (null: not recorded, a file's one host). */
  host: string | null;
}

/**
 * History rows still `running`: their orchestrator died (or was stopped) while they ran. With
 * `owner` (one of several workers, orchestrator/workers.ts): only those of the steps it holds.
 */
export async function leftRunning(db: Db, owner?: number): Promise<LeftRunRow[]> {
  const rows = await db
    .prepare(
      `SELECT h.id, h.step_id, sc.name AS cloud, h.state, h.attempt, h.started_at, h.pid, h.pgid, h.proc_start, h.host
       FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id
       WHERE h.outcome = 'running'${owner === undefined ? '' : ' AND st.owner = $1'} ORDER BY h.id`,
    )
    .all(...(owner === undefined ? [] : [owner])) as {
    id: number;
    step_id: number;
    cloud: string;
    state: string;
    attempt: number;
    started_at: string;
    pid: number | null;
    pgid: number | null;
    proc_start: number | null;
    host: string | null;
  }[];
  return rows.map((r) => ({
    historyId: r.id,
    stepId: r.step_id,
    cloud: r.cloud,
    state: r.state,
    attempt: r.attempt,
    startedAt: r.started_at,
    proc: r.pid === null ? null : { pid: r.pid, pgid: r.pgid ?? r.pid, procStart: r.proc_start },
    host: r.host,
  }));
}

/** Of these history rows, those still `running`. */
export async function runsStillRunning(db: Db, historyIds: readonly number[]): Promise<number[]> {
  if (historyIds.length === 0) return [];
  return (await sql(db, `SELECT id FROM step_history WHERE outcome = 'running' AND id IN (${idsIn(db, '$1')})`)
    .pluck()
    .all(JSON.stringify(historyIds))) as number[];
}

/** The processes runs started, by history row (inside the caller's transaction). */
export async function recordRunProcesses(db: Db, procs: readonly [number, RunProcess][], host: string): Promise<void> {
  const stmt = sql(db, 'UPDATE step_history SET pid = $1, pgid = $2, proc_start = $3, host = $4 WHERE id = $5');
  for (const [historyId, p] of procs) await stmt.run(p.pid, p.pgid, p.procStart, host, historyId);
}

/** The hosts other than `host` where runs of the subcloud ran (their logs are there), with how many. */
export async function runHostsElsewhere(db: Db, cloud: string, host: string): Promise<{ host: string; n: number }[]> {
  return (await sql(
    db,
    `SELECT h.host, count(*) AS n FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id
     WHERE sc.name = $1 AND h.host IS NOT NULL AND h.host != $2 GROUP BY h.host ORDER BY h.host`,
  ).all(cloud, host)) as { host: string; n: number }[];
}

/** A run's progress line for its step's details (orchestrator/run-details.ts). */
export interface RunDetailsRow {
  stepId: number;
  /** The state the run is for, and its history row: the line lands only while both still hold. */
  state: string;
  historyId: number;
  text: string;
}

/**
 * Progress lines as their steps' details, each only while its run is the step's current one: the
 * step is still in the run's state and the run's history row still `running`. The orchestrator
 * hands only lines of runs in flight; this guard keeps a line from an ended run or an earlier
 * attempt off a later state's details even so. Returns how many rows changed.
 */
export async function recordRunDetails(db: Db, rows: readonly RunDetailsRow[]): Promise<number> {
  const stmt = sql(
    db,
    `UPDATE strategy_step SET details = $1, updated_at = $2
     WHERE id = $3 AND state = $4 AND details IS DISTINCT FROM $5
       AND EXISTS (SELECT 1 FROM step_history WHERE id = $6 AND step_id = $7 AND outcome = 'running')`,
  );
  const at = now(db);
  let n = 0;
  for (const r of rows) n += (await stmt.run(r.text, at, r.stepId, r.state, r.text, r.historyId, r.stepId)).changes;
  return n;
}

/** (step, state) keys whose latest run was interrupted: the next run of that state is resumed. */
export async function interruptedLast(db: Db): Promise<Set<string>> {
  const rows = await db
    .prepare(
      `SELECT h.step_id AS "stepId", h.state FROM step_history h
       WHERE h.outcome = 'interrupted'
         AND h.attempt = (SELECT max(attempt) FROM step_history x WHERE x.step_id = h.step_id AND x.state = h.state)`,
    )
    .all() as { stepId: number; state: string }[];
  return new Set(rows.map((r) => `${r.stepId}\u0000${r.state}`));
}

/**
 * Whether the run of (step, state) before `attempt` was cut off (`interrupted`): the next is told
 * so (DCM_RESUMED). Asked as a run starts on a store several workers share, where another
 * worker's takeover may have closed it after this one last read the history.
 */
export async function cutOffBefore(db: Db, stepId: number, state: string, attempt: number): Promise<boolean> {
  const row = (await sql(
    db,
    `SELECT outcome FROM step_history WHERE step_id = $1 AND state = $2 AND attempt < $3 ORDER BY attempt DESC LIMIT 1`,
  ).get(stepId, state, attempt)) as { outcome: string } | undefined;
  return row?.outcome === 'interrupted';
}

/** What the history says of a state's retries: failed runs that will run again, and when the next is due. */
export interface RetryBudget {
  /** Runs of this entry into the state that failed (or timed out) and were followed by a retry. */
  failures: number;
  /** When the next attempt is due (epoch ms), if the last run of the state was such a failure. */
  dueMs: number | null;
  /** The backoff that run's end meant (its due time less its end, both by the clock that wrote them). */
  backoffMs?: number;
}

/**
 * For the steps caught mid-state (only those can be in a retry), the retries their current state
 * has used: read from the history, so that a kill -9 neither resets the budget nor skips the
 * backoff (SPEC §7.2). The runs of one entry into a state are its latest rows back to the first
 * that was neither a retried failure nor an interruption (`strategy retry` starts a new entry).
 */
export async function retryBudgets(db: Db): Promise<Map<string, RetryBudget>> {
  const rows = await db
    .prepare(
      `SELECT h.step_id AS "stepId", h.state, h.outcome, h.retry_at AS "retryAt", h.finished_at AS "finishedAt", h.details LIKE $1 || '%' AS deferral
       FROM step_history h JOIN strategy_step st ON st.id = h.step_id AND st.state = h.state
       WHERE st.state NOT IN ('initial', 'complete', 'failed', 'aborted')
       ORDER BY h.step_id, h.attempt DESC, h.id DESC`,
    )
    .all(DEFERRED_RUN_PREFIX) as { stepId: number; state: string; outcome: string; retryAt: string | null; finishedAt: string | null; deferral: number }[];
  const out = new Map<string, RetryBudget>();
  const closed = new Set<string>();
  const latestSeen = new Set<string>();
  for (const r of rows) {
    const key = `${r.stepId}\u0000${r.state}`;
    // A deferral (its site did not answer) spends none of the state's retries, and its wait is over.
    if (closed.has(key) || r.outcome === 'running' || r.deferral === 1) continue;
    let b = out.get(key);
    if (!b) out.set(key, (b = { failures: 0, dueMs: null }));
    const latest = !latestSeen.has(key);
    latestSeen.add(key);
    if (r.retryAt !== null) {
      // Only the latest run's retry is still to come; an interrupted retry runs again at once.
      if (latest) {
        b.dueMs = parseTime(r.retryAt);
        if (r.finishedAt !== null) b.backoffMs = Math.max(0, b.dueMs - parseTime(r.finishedAt));
      }
      b.failures++;
    } else if (r.outcome !== 'interrupted') closed.add(key);
  }
  for (const [k, b] of out) if (b.failures === 0) out.delete(k);
  return out;
}

/** A run's end as its host wrote it (run_end: the exec driver's launcher); undefined while none. */
export interface RunEndRow {
  code: number | null;
  signal: string | null;
  /** JSON: what the run left that its outcome is read from (drivers/exec/run-facts.ts). */
  facts: string;
  host: string;
}

export async function runEnd(db: Db, runId: string): Promise<RunEndRow | undefined> {
  return (await sql(db, 'SELECT code, signal, facts, host FROM run_end WHERE run_id = $1').get(runId)) as RunEndRow | undefined;
}

/**
 * A run another host's worker committed and may not have started (it stopped first): claimed
 * here for nobody, unless its launcher claimed it first. True: given up, it will never start.
 */
export async function abandonRemoteRun(db: Db, runId: string, host: string): Promise<boolean> {
  if ((await sql(db, `INSERT INTO run_claim (run_id, host, what, at) VALUES ($1, $2, 'abandoned', $3) ON CONFLICT (run_id) DO NOTHING`).run(runId, host, now(db))).changes === 1) return true;
  // Claimed already: by its launcher, or given up by this try's own insert whose answer was lost
  // with its connection (committed, then cut), or by another taker: given up either way.
  return (await runClaim(db, runId))?.what === 'abandoned';
}

/** How a run was claimed: `started` by its host's launcher, or `abandoned` (given up by a taker); none yet. */
export async function runClaim(db: Db, runId: string): Promise<{ what: 'started' | 'abandoned'; host: string } | undefined> {
  return (await sql(db, 'SELECT what, host FROM run_claim WHERE run_id = $1').get(runId)) as { what: 'started' | 'abandoned'; host: string } | undefined;
}

/** Who writes an end in a run's host's stead (`resolveRun`): `operator USER@HOST`. */
const OPERATOR = 'operator ';

/**
 * A run's end as the operator says it (`strategy-step resolve`): written where its host's launcher
 * would have written it, `operator USER@HOST` (`by`) in its host's place, the reason as the last
 * line of its stderr. The first end written wins. False: one was there already.
 */
export async function resolveRun(db: Db, runId: string, by: string, code: number, reason: string): Promise<boolean> {
  const facts = JSON.stringify({ err: reason, log: '', match: '', next: null });
  return (await sql(db, 'INSERT INTO run_end (run_id, host, code, signal, facts, ended_at) VALUES ($1, $2, $3, NULL, $4, $5) ON CONFLICT (run_id) DO NOTHING').run(runId, `${OPERATOR}${by}`, code, facts, now(db))).changes === 1;
}

/** Whether the operator said how the run ended (`strategy-step resolve`). */
export async function operatorEnd(db: Db, runId: string): Promise<boolean> {
  return (await sql(db, 'SELECT 1 FROM run_end WHERE run_id = $1 AND host LIKE $2').get(runId, `${OPERATOR}%`)) !== undefined;
}

/** A run claimed by the host that starts it (the simulator's sites; the exec launcher writes its own). False: given up first. */
export async function claimRun(db: Db, runId: string, host: string): Promise<boolean> {
  if ((await sql(db, `INSERT INTO run_claim (run_id, host, what, at) VALUES ($1, $2, 'started', $3) ON CONFLICT (run_id) DO NOTHING`).run(runId, host, now(db))).changes === 1) return true;
  // This host's own claim whose answer was lost (committed, then the connection cut) is still its
  // own: only a taker's `abandoned` refuses it (the exec launcher's claim says the same, in one statement).
  const c = await runClaim(db, runId);
  return c?.what === 'started' && c.host === host;
}

/** A run's end as its host saw it (the simulator's sites; the exec launcher writes its own). */
export async function recordRunEnd(db: Db, runId: string, host: string, code: number | null, signal: string | null): Promise<void> {
  await sql(db, 'INSERT INTO run_end (run_id, host, code, signal, facts, ended_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id) DO NOTHING').run(runId, host, code, signal, '{}', now(db));
}

/**
 * A run still `running` is of unknown outcome: its history row and its step's line say so, and
 * the event record (`run unknown`, by `who`: its on_event hears it, issue 49).
 */
export async function markRunUnknown(db: Db, run: { historyId: number; stepId: number; state: string; cloud?: string; attempt?: number }, why: string, who?: Actor): Promise<void> {
  const text = `${UNKNOWN_PREFIX}${why}`;
  await db.transaction(async (tx) => {
    const changed = (await sql(tx, `UPDATE step_history SET details = $1 WHERE id = $2 AND outcome = 'running'`).run(text, run.historyId)).changes;
    await recordRunDetails(tx, [{ ...run, text }]);
    if (changed && who) await recordEvent(tx, who, EVENTS.runUnknown, `${run.cloud ?? `step ${run.stepId}`}: ${run.state}${run.attempt ? `, attempt ${run.attempt}` : ''}: ${why}`);
  }).immediate();
}

/** The history rows of the runs of unknown outcome (markRunUnknown). */
export async function unknownRuns(db: Db): Promise<Set<number>> {
  return new Set(await sql(db, `SELECT id FROM step_history WHERE outcome = 'running' AND details LIKE $1`).pluck().all(`${UNKNOWN_PREFIX}%`) as number[]);
}

/** The end a `strategy retry` writes for a run of unknown outcome: no code, this signal. */
const RETRY_SIGNAL = 'strategy retry';

/**
 * The operator's word that a run of unknown outcome runs again, written as its end in its host's
 * stead (fenced by the run's id, as resolveRun). False: an end was there already.
 */
export async function retryRun(db: Db, runId: string, by: string): Promise<boolean> {
  return (await sql(db, `INSERT INTO run_end (run_id, host, code, signal, facts, ended_at) VALUES ($1, $2, NULL, $3, '{}', $4) ON CONFLICT (run_id) DO NOTHING`)
    .run(runId, `${OPERATOR}${by}`, RETRY_SIGNAL, now(db))).changes === 1;
}

/** Who said the run is to run again (retryRun), by its end; null: the end is another. */
export function retriedBy(end: { host: string; code: number | null; signal: string | null }): string | null {
  return end.code === null && end.signal === RETRY_SIGNAL && end.host.startsWith(OPERATOR) ? end.host.slice(OPERATOR.length) : null;
}
