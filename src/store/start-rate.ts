/**
 * The start rate as the store keeps it (domain/start-rate.ts): each stage's `start_rate` (JSON of
 * the options, as create or `strategy update` set it), the time of the stage's last start
 * (`rate_last_at`, as the history wrote it), and a group's default (`subcloud_group_gate`).
 *
 * The commit that makes a start reads the rate and the last start and moves the last start, in
 * its own transaction: every writer's transaction holds the store's writer lock (a file's, or the
 * server's advisory lock), so the starts of every worker of a strategy are spaced as one.
 */
import type { Db } from './open.js';
import { idsIn, sql } from './statements.js';

/** At create, once the stages are in: the create's rate, else each stage's group's default, else none. */
export async function fillStartRates(db: Db, rate: string | null): Promise<void> {
  await sql(
    db,
    `UPDATE strategy_stage SET start_rate = coalesce($1,
       (SELECT d.start_rate FROM subcloud_group_gate d JOIN subcloud_group g ON g.id = d.group_id WHERE g.name = strategy_stage.group_name))`,
  ).run(rate);
}

/** `strategy update --start-rate`: these stages' rate (null: none). */
export async function setStageRates(db: Db, stages: readonly number[], rate: string | null): Promise<void> {
  const stmt = sql(db, 'UPDATE strategy_stage SET start_rate = $1 WHERE stage = $2');
  for (const st of stages) await stmt.run(rate, st);
}

/** Each stage's rate as stored (null: none), by stage. */
export async function stageRates(db: Db): Promise<Map<number, string | null>> {
  const rows = (await sql(db, 'SELECT stage, start_rate FROM strategy_stage ORDER BY stage').all()) as { stage: number; start_rate: string | null }[];
  return new Map(rows.map((r) => [r.stage, r.start_rate]));
}

/** A group's default rate (`subcloud-group add|update --start-rate`). */
export async function groupStartRate(db: Db, groupId: number): Promise<string | null> {
  return ((await sql(db, 'SELECT start_rate FROM subcloud_group_gate WHERE group_id = $1').pluck().get(groupId)) as string | null | undefined) ?? null;
}

/** Set (or, with null, remove) a group's default rate; its gate defaults are kept. */
export async function setGroupStartRate(db: Db, groupId: number, rate: string | null): Promise<void> {
  await sql(
    db,
    `INSERT INTO subcloud_group_gate AS g (group_id, start_rate) VALUES ($1, $2)
     ON CONFLICT (group_id) DO UPDATE SET start_rate = excluded.start_rate`,
  ).run(groupId, rate);
}

/**
 * Inside the commit that opens new subclouds: the strategy's state (which that commit reads
 * anyway) and, in the same statement, the stage's rate and last start, so that a stage without a
 * rate costs no statement more.
 */
export async function stateAndRate(db: Db, stage: number): Promise<{ state: string | undefined; rate: string | null; lastAt: string | null }> {
  const row = (await sql(db, STATE_AND_RATE).get(stage)) as { state: string; rate: string | null; lastAt: string | null } | undefined;
  return { state: row?.state, rate: row?.rate ?? null, lastAt: row?.lastAt ?? null };
}

const STATE_AND_RATE = 'SELECT s.state, g.start_rate AS rate, g.rate_last_at AS "lastAt" FROM strategy s LEFT JOIN strategy_stage g ON g.stage = $1 WHERE s.id = 1';

/**
 * The next write transactions of `db` read the strategy's state and `stage`'s rate with their
 * BEGIN (platform/db.ts readAtBegin): a batch that opens new subclouds asks for no round trip of
 * its own. Null: they do not. Read after the writers' lock, as stateAndRate is, and a stop is
 * written only under that lock whole: the answer is the one stateAndRate would have had.
 */
export function stateAndRateAtBegin(db: Db, stage: number | null): void {
  db.readAtBegin?.('start', stage === null ? null : STATE_AND_RATE, stage === null ? [] : [stage]);
}

/** The strategy's complete steps: what a ramp counts. */
export async function completeSteps(db: Db): Promise<number> {
  return Number(await sql(db, `SELECT count(*) FROM strategy_step WHERE state = 'complete'`).pluck().get());
}

/**
 * One of several workers made a start that has not begun at its site yet (orchestrator/pacer.ts):
 * the stage's last start is put at `held`, the time past which the others stop waiting for it.
 */
export async function holdStageStart(db: Db, stage: number, held: string): Promise<void> {
  await sql(db, 'UPDATE strategy_stage SET rate_last_at = $1 WHERE stage = $2').run(held, stage);
}

/**
 * A start began at its site at `at` (orchestrator/pacer.ts): later than its commit wrote it, or
 * held (`held`) until it began, or never began (`at` is then its commit's time). The stage's last
 * start moves to it: forward, or back from the hold this worker wrote, never back from a later
 * start of another worker's.
 */
export async function markLateStart(db: Db, stage: number, at: string, held: string | null): Promise<void> {
  await sql(db, 'UPDATE strategy_stage SET rate_last_at = $1 WHERE stage = $2 AND (rate_last_at IS NULL OR rate_last_at < $1 OR rate_last_at = $3)').run(at, stage, held);
}

/** The stage's last start is the latest of these runs' starts, as the history wrote them. */
export async function markStageStart(db: Db, stage: number, historyIds: readonly number[]): Promise<void> {
  await sql(
    db,
    `UPDATE strategy_stage SET rate_last_at = (SELECT max(started_at) FROM step_history WHERE id IN (${idsIn(db, '$1')})) WHERE stage = $2`,
  ).run(JSON.stringify(historyIds), stage);
}

