/**
 * A batch of transitions written on PostgreSQL in one statement, not three or four per
 * transition. The server runs a connection's statements one after the other, each answered
 * before the next is sent (node-postgres does not pipeline), so a commit of 33 transitions was
 * about 100 round trips, some 16 ms while holding the writers' lock, and every other writer
 * waited through them. Here the closes, the moves, the opens, the numbering of the runs opened and
 * the completed subclouds' endpoints are one statement over arrays (`unnest`), whatever the batch's size (figure 1's work on one
 * worker: 45-50 s in a statement per row, 10 s in one per kind of write; BENCHMARKS.md
 * "PostgreSQL").
 *
 * The same guarded writes as the file's (store/transitions.ts), with the same results: a run is
 * closed only while `running`, a step moves only from the state the orchestrator believed, and
 * each transition learns what its writes changed (RETURNING), so that the writer's checks and
 * their errors are the file's. A statement changes a row once, so a batch in which a step moves
 * twice is written in rounds, each step at most once a round, in the batch's order; in a round the
 * runs are closed before any is opened (one running operation per step, a unique index). The runs
 * a round starts as the next attempt are numbered in it (NEXT_ATTEMPT), so that no read of the
 * history goes before it.
 */
import type { Db } from '../open.js';
import type { Transition } from '../../domain/transition.js';
import type { Endpoint } from '../../domain/types.js';
import { sql } from '../statements.js';
import { SYNC_COLUMN, updateSubcloud } from '../subclouds.js';
import { recordText, siteOut, type Written } from '../transitions.js';

/** Each endpoint's column set in-sync where the completing step's `done` names it (a prestage's: its status). */
const SYNCED = [
  ...(Object.entries(SYNC_COLUMN) as [Endpoint, string][]).map(([e, col]) => `${col} = CASE WHEN v.done = '${e}' THEN 'in-sync' ELSE sc.${col} END`),
  `prestage_status = CASE WHEN v.done = '' THEN 'complete' ELSE sc.prestage_status END`,
].join(', ');

/**
 * A round in one statement, so one round trip while holding the writers' lock: the runs closed,
 * the steps moved and the runs opened, each data-modifying part over arrays. A run is opened only
 * for a step that moved, numbered after the history's last run of its step and state when asked
 * (NEXT_ATTEMPT, 0), and only once every run of the round is closed: the `(SELECT count(*) FROM
 * closed)` gate is evaluated once, before the first row is inserted, and running that part to its
 * end is what lets a step's new run in beside its old one under the one-running-operation index.
 * Every part reads the history as it was before the statement, which no closing changes the
 * attempts of. A step that moved and completes its subcloud marks the subcloud's endpoint in-sync
 * (`done`: the endpoint, '' for a prestage's status) in the same statement (one round trip less a
 * commit: issue 51). Answers one row: the runs closed, the steps moved (with its subcloud's words
 * if it was taken out and the step starts an operation: issue 49) and the runs opened, each as
 * JSON (a row per change was 160,000 rows for figure 1's work, each parsed into an object).
 *
 * The steps moved are looked up by key (their ids through an array, as store/statements.ts
 * idsIn): joined with the batch's rows alone, which the planner counts as a hundred, the update
 * read every step of the strategy (a hash join over a sequential scan) in every batch, a cost that
 * grows with the fleet, not the batch (issue 51: 10,000 steps; test/pg/batch-plan.test.ts).
 */
export const WRITE = `WITH v AS (
    SELECT v.id, v.from_state, v.to_state, v.details, v.ended, v.subcloud, v.done,
      CASE WHEN v.attempt = 0
        THEN coalesce((SELECT max(x.attempt) FROM step_history x WHERE x.step_id = v.id AND x.state = v.to_state), 0) + 1
        ELSE v.attempt END AS num
    FROM json_to_recordset($1::json)
      AS v(id bigint, from_state text, to_state text, details text, attempt integer, ended boolean, subcloud bigint, done text)),
  closed AS (UPDATE step_history AS h
    SET outcome = c.outcome, finished_at = c.finished_at, details = c.details, retry_at = c.retry_at
    FROM json_to_recordset($3::json) AS c(id bigint, outcome text, finished_at text, details text, retry_at text)
    WHERE h.id = c.id AND h.outcome = 'running'
    RETURNING h.id),
  moved AS (UPDATE strategy_step AS s
    SET state = v.to_state, details = v.details, attempt = COALESCE(v.num, s.attempt),
      started_at = COALESCE(s.started_at, $2::text), finished_at = CASE WHEN v.ended THEN $2::text ELSE NULL END, updated_at = $2::text
    FROM v WHERE s.id IN (SELECT unnest(ARRAY(SELECT id FROM v))) AND s.id = v.id AND s.state = v.from_state
    RETURNING s.id, CASE WHEN v.num IS NOT NULL THEN ${siteOut('s')} END AS out),
  opened AS (INSERT INTO step_history (step_id, state, attempt, started_at, outcome)
    SELECT v.id, v.to_state, v.num, $2::text, 'running' FROM v
    WHERE v.num IS NOT NULL AND v.id IN (SELECT id FROM moved) AND (SELECT count(*) FROM closed) >= 0
    RETURNING step_id, id, attempt),
  synced AS (UPDATE subcloud AS sc SET ${SYNCED}, updated_at = $2::text
    FROM v WHERE sc.id = v.subcloud AND v.done IS NOT NULL AND v.id IN (SELECT id FROM moved))
SELECT (SELECT coalesce(json_agg(id), '[]') FROM closed),
  (SELECT coalesce(json_agg(json_build_array(id, out)), '[]') FROM moved),
  (SELECT coalesce(json_agg(json_build_array(step_id, id, attempt)), '[]') FROM opened)`;


/** What one row's write changed, in the shape of a better-sqlite3 run's result. */
const changed = (n: number, id = 0) => ({ changes: n, lastInsertRowid: id });

/** Write `batch` at time `at`: one result per transition, in the batch's order. */
export async function writeBatchPg(db: Db, batch: readonly Transition[], at: string): Promise<Written[]> {
  const out: Written[] = [];
  for (const round of rounds(batch)) out.push(...(await writeRound(db, round, at)));
  return out;
}

/** The batch cut where a step comes again: each step at most once a round, the order kept. */
function rounds(batch: readonly Transition[]): Transition[][] {
  const out: Transition[][] = [];
  let round: Transition[] = [];
  let steps = new Set<number>();
  for (const t of batch) {
    if (steps.has(t.stepId)) {
      out.push(round);
      round = [];
      steps = new Set();
    }
    round.push(t);
    steps.add(t.stepId);
  }
  if (round.length) out.push(round);
  return out;
}

async function writeRound(db: Db, round: readonly Transition[], at: string): Promise<Written[]> {
  const closes = round.filter((t) => t.close);
  // The rows as JSON (json_to_recordset): one native JSON.stringify, where node-postgres would
  // escape every element of every array one by one (issue 51: a sixth of a worker's CPU).
  const rows = await sql(db, WRITE)
    .raw()
    .all(
      JSON.stringify(
        round.map((t) => ({
          id: t.stepId,
          from_state: t.from,
          to_state: t.to,
          details: recordText(t.details),
          attempt: t.startAttempt ?? null,
          ended: t.ended,
          subcloud: t.subcloudId,
          done: t.completes ? (t.completes.endpoint ?? '') : null,
        })),
      ),
      at,
      JSON.stringify(
        closes.map((t) => ({
          id: t.close!.historyId,
          outcome: t.close!.outcome,
          finished_at: t.close!.finishedAt,
          details: recordText(t.close!.details),
          retry_at: t.close!.retryAt ?? null,
        })),
      ),
    ) as [[number[], [number, string | null][], [number, number, number][]]];
  const [closedIds, movedRows, openedRows] = rows[0];
  const closed = new Set(closedIds);
  const moved = new Set<number>();
  const opened = new Map<number, number>();
  const byStep = new Map(round.map((t) => [t.stepId, t]));
  const outs = new Map<number, string>();
  for (const [id, out] of movedRows) {
    moved.add(id);
    if (out) outs.set(id, out);
  }
  for (const [id, historyId, attempt] of openedRows) {
    opened.set(id, historyId);
    // The number the statement gave a run started as the next attempt: the orchestrator's own.
    byStep.get(id)!.startAttempt = attempt;
  }
  // What each site said of itself, after what completion assumes: the inventory follows its report.
  for (const t of round) {
    if (!t.observed || !moved.has(t.stepId)) continue;
    const o = t.observed;
    await updateSubcloud(db, t.subcloudId, { software_version: o.software_version, availability: o.availability, sync: o.sync });
  }
  return round.map((t) => ({
    closed: t.close ? changed(closed.has(t.close.historyId) ? 1 : 0) : undefined,
    updated: changed(moved.has(t.stepId) ? 1 : 0),
    opened: opened.has(t.stepId) ? changed(1, opened.get(t.stepId)) : undefined,
    out: outs.get(t.stepId) ?? null,
  }));
}
