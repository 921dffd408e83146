/**
 * A batch of transitions written on PostgreSQL in a few statements, not three or four per
 * transition. The server runs a connection's statements one after the other, each answered
 * before the next is sent (node-postgres does not pipeline), so a commit of 33 transitions was
 * about 100 round trips, some 16 ms while holding the writers' lock. Here each kind of write is
 * one statement over arrays (`unnest`), whatever the batch's size (figure 1's work on one worker:
 * 45-50 s before, 10 s after; BENCHMARKS.md "PostgreSQL").
 *
 * The same guarded writes as the file's (store/transitions.ts), with the same results: a run is
 * closed only while `running`, a step moves only from the state the orchestrator believed, and
 * each transition learns what its writes changed (RETURNING), so that the writer's checks and
 * their errors are the file's. A statement changes a row once, so a batch in which a step moves
 * twice is written in rounds, each step at most once a round, in the batch's order; in a round the
 * runs are closed before any is opened (one running operation per step, a unique index).
 */
import type { Db } from '../open.js';
import type { Transition } from '../../domain/transition.js';
import type { Endpoint } from '../../domain/types.js';
import { sql } from '../statements.js';
import { updateSubcloud } from '../subclouds.js';
import { completionSet, DETAILS_MAX, type Written } from '../transitions.js';

const CLOSE = `UPDATE step_history AS h
  SET outcome = v.outcome, finished_at = v.finished_at, details = v.details, retry_at = v.retry_at
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) AS v(id, outcome, finished_at, details, retry_at)
  WHERE h.id = v.id AND h.outcome = 'running'
  RETURNING h.id`;

const MOVE = `UPDATE strategy_step AS s
  SET state = v.to_state, details = v.details, attempt = COALESCE(v.attempt, s.attempt),
    started_at = COALESCE(s.started_at, $7), finished_at = CASE WHEN v.ended THEN $7 ELSE NULL END, updated_at = $7
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::integer[], $6::boolean[]) AS v(id, from_state, to_state, details, attempt, ended)
  WHERE s.id = v.id AND s.state = v.from_state
  RETURNING s.id`;

const OPEN = `INSERT INTO step_history (step_id, state, attempt, started_at, outcome)
  SELECT v.step_id, v.state, v.attempt, $4, 'running' FROM unnest($1::bigint[], $2::text[], $3::integer[]) AS v(step_id, state, attempt)
  RETURNING step_id, id`;

const syncText = (e: Endpoint | null) => `UPDATE subcloud SET ${completionSet(e)}, updated_at = $1 WHERE id = ANY($2::bigint[])`;

/** What one row's write changed, in the shape of a better-sqlite3 run's result. */
const changed = (n: number, id = 0) => ({ changes: n, lastInsertRowid: id });

/** Write `batch` at time `at`: one result per transition, in the batch's order. */
export function writeBatchPg(db: Db, batch: readonly Transition[], at: string): Written[] {
  const out: Written[] = [];
  for (const round of rounds(batch)) out.push(...writeRound(db, round, at));
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

function writeRound(db: Db, round: readonly Transition[], at: string): Written[] {
  const closes = round.filter((t) => t.close);
  const closed = new Set<number>();
  if (closes.length) {
    const rows = sql(db, CLOSE)
      .pluck()
      .all(
        closes.map((t) => t.close!.historyId),
        closes.map((t) => t.close!.outcome),
        closes.map((t) => t.close!.finishedAt),
        closes.map((t) => t.close!.details.slice(0, DETAILS_MAX)),
        closes.map((t) => t.close!.retryAt ?? null),
      ) as number[];
    for (const id of rows) closed.add(id);
  }
  const moved = new Set(
    sql(db, MOVE)
      .pluck()
      .all(
        round.map((t) => t.stepId),
        round.map((t) => t.from),
        round.map((t) => t.to),
        round.map((t) => t.details.slice(0, DETAILS_MAX)),
        round.map((t) => t.startAttempt ?? null),
        round.map((t) => t.ended),
        at,
      ) as number[],
  );
  // A run opens only for a step that moved: one that did not fails the batch, which rolls back.
  const opens = round.filter((t) => t.startAttempt !== undefined && moved.has(t.stepId));
  const opened = new Map<number, number>();
  if (opens.length) {
    const rows = sql(db, OPEN)
      .raw()
      .all(
        opens.map((t) => t.stepId),
        opens.map((t) => t.to),
        opens.map((t) => t.startAttempt),
        at,
      ) as [number, number][];
    for (const [stepId, id] of rows) opened.set(stepId, id);
  }
  // The subclouds whose step completed, one statement per endpoint; then what each site said.
  const completing = new Map<Endpoint | null, number[]>();
  for (const t of round) {
    if (!t.completes || !moved.has(t.stepId)) continue;
    const ids = completing.get(t.completes.endpoint) ?? [];
    ids.push(t.subcloudId);
    completing.set(t.completes.endpoint, ids);
  }
  for (const [e, ids] of completing) sql(db, syncText(e)).run(at, ids);
  for (const t of round) {
    if (!t.observed || !moved.has(t.stepId)) continue;
    const o = t.observed;
    updateSubcloud(db, t.subcloudId, { software_version: o.software_version, availability: o.availability, sync: o.sync });
  }
  return round.map((t) => ({
    closed: t.close ? changed(closed.has(t.close.historyId) ? 1 : 0) : undefined,
    updated: changed(moved.has(t.stepId) ? 1 : 0),
    opened: opened.has(t.stepId) ? changed(1, opened.get(t.stepId)) : undefined,
  }));
}
