/**
 * The orchestrator's reads of the steps, a window's worth at a time: a cursor over one stage's
 * open steps in step order, so that the process holds about a window of steps whatever the fleet
 * (SPEC §4 "memory follows the window").
 */
import type { Statement } from '../platform/db.js';
import type { Db } from './open.js';
import { sql } from './statements.js';
import type { ApplyStep } from './transitions.js';

/** An open step as the window sees it. */
export interface CursorStep extends ApplyStep {
  /**
   * Put back in the state it failed in by `strategy retry`: mid-state, but nothing of it is in
   * flight, so it starts as a new subcloud does (held by a pause, an abort, the failure budget).
   * A step killed while a driver's retry waited out its backoff (its last run has a `retry_at`)
   * is in flight, not retried.
   */
  retried: boolean;
}

const COLUMNS = `st.id, st.subcloud_id AS "subcloudId", sc.name AS cloud, st.stage, st.state, st.attempt`;

/** A mid-state step whose last run failed and has no backoff due: `strategy retry` put it back. */
const RETRIED = `coalesce((SELECT CASE WHEN h.outcome IN ('failed', 'timeout') AND h.retry_at IS NULL THEN 1 ELSE 0 END
  FROM step_history h WHERE h.step_id = st.id ORDER BY h.id DESC LIMIT 1), 0)`;

/** Caught mid-state: the generated column the index of mid-state steps is keyed on (store/migrations.ts MID_COLUMN_MIGRATION). */
const MID = 'st.mid';

/** A run of the step is `running` in the history: left going by the last process, and adopted. */
const RUNNING = `EXISTS (SELECT 1 FROM step_history h WHERE h.step_id = st.id AND h.outcome = 'running')`;

/** What each phase reads, in the order read. */
const PHASES = {
  // A run left going by the last process, adopted: it is on its site now, whatever the window.
  adopted: `${MID} AND ${RUNNING}`,
  // The rest of those in flight when the last process stopped: their state runs again.
  going: `${MID} AND NOT ${RUNNING} AND st.state != 'deferred' AND ${RETRIED} = 0`,
  // Started once but holding no slot: deferred (tried again when due), or put back by a retry.
  waiting: `${MID} AND NOT ${RUNNING} AND (st.state = 'deferred' OR ${RETRIED} = 1)`,
  // One of several workers: its part of the steps never started first, then what is left, from the
  // last step back. Its part: the ids that leave its rank among the workers there are now (read
  // with the steps) over their number. Workers that all read the stage from its first step asked
  // for the same steps, and all but one had each refused (issue 51: four workers read and asked
  // for some 37,000 steps to start 10,000); each takes its own part first, then helps the others
  // from the far end of theirs, where they come last.
  part: `st.state = 'initial'
    AND st.id % (SELECT count(*) FROM apply_worker) = (SELECT count(*) FROM apply_worker w WHERE w.id < $3)`,
  rest: `st.state = 'initial'`,
  initial: `st.state = 'initial'`,
} as const;
type Phase = keyof typeof PHASES;
const ORDER: readonly Phase[] = ['adopted', 'going', 'waiting', 'part', 'rest', 'initial'];
/** Phases read from the last step back (`after` is then the step read before, from above). */
const BACKWARDS: ReadonlySet<Phase> = new Set(['rest']);
/** Where a backwards phase starts: above every id. */
const TOP = Number.MAX_SAFE_INTEGER;

/**
 * Steps whose run the last process left going (adopted) go first, then the rest of those caught
 * mid-state (their state runs again), then those started once that hold no slot (deferred, or put
 * back by `strategy retry`), then the steps never started; each phase in id order (but a worker's
 * help with the others' parts, from the last step back). An adopted run
 * is on its site already, so it takes its slot before anything else starts: read after another
 * step that needs a slot, it waited behind it while the window was exceeded — and one of several
 * workers waited for ever, the other step's claim refused because the adopted run fills the
 * stage's window. A window sees every step in flight before one that starts anew (StageWindow's
 * kinds), as its stop rule expects.
 */
export class StageCursor {
  private phase = 0;
  private after = 0;
  private readonly reads: Map<Phase, Statement>;
  /** Whether the stage has a step caught mid-state that is this reader's (one look, on the mid-state index). */
  private readonly anyMid: Statement;
  /** The mid-state phases were found empty at the start of this read: straight to the new steps. */
  private midChecked = false;

  /** `owner`: one of several workers (orchestrator/workers.ts) reads only the steps no other live worker holds. */
  constructor(
    db: Db,
    private readonly stage: number,
    private readonly owner?: number,
  ) {
    const mine = owner === undefined ? '' : ' AND (st.owner IS NULL OR st.owner = $3 OR NOT EXISTS (SELECT 1 FROM apply_worker w WHERE w.id = st.owner))';
    // Prepared once per connection (statements.ts): a cursor is made for every pass over a stage.
    this.anyMid = sql(db, `SELECT EXISTS (SELECT 1 FROM strategy_step st WHERE st.stage = $1 AND ${MID}${mine.replace('$3', '$2')}) AS any`);
    this.phases = owner === undefined ? ORDER.filter((p) => p !== 'part' && p !== 'rest') : ORDER.filter((p) => p !== 'initial');
    this.reads = new Map(
      this.phases.map((p) => [
        p,
        sql(
          db,
          `SELECT ${COLUMNS}, ${p === 'initial' || p === 'part' || p === 'rest' ? '0' : RETRIED} AS retried
           FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id
           WHERE st.stage = $1 AND st.id ${BACKWARDS.has(p) ? '<' : '>'} $2 AND ${PHASES[p]}${mine}
           ORDER BY st.id${BACKWARDS.has(p) ? ' DESC' : ''} LIMIT ${owner === undefined ? '$3' : '$4'}`,
        ),
      ]),
    );
  }

  /** The phases this reader reads, in order (a lone orchestrator has no part of its own). */
  private readonly phases: readonly Phase[];

  /** Rewinds so far: a read under way when one comes leaves the cursor where the rewind put it. */
  private rewinds = 0;

  /** Read from the start again (a worker looking for steps another one let go of). */
  rewind(): void {
    this.rewinds++;
    this.phase = 0;
    this.after = 0;
    this.midChecked = false;
  }

  /** Up to `limit` more steps; fewer (or none) once the stage has no more. */
  async next(limit: number): Promise<CursorStep[]> {
    const out: CursorStep[] = [];
    const rewinds = this.rewinds;
    if (this.phase === 0 && this.after === 0 && !this.midChecked) {
      // Most passes over a stage find nothing caught mid-state (a stage begun anew, or others'
      // steps only): one look instead of a read of each of the three phases.
      this.midChecked = true;
      const args = this.owner === undefined ? [this.stage] : [this.stage, this.owner];
      const any = (await this.anyMid.get(...args)) as { any: number };
      if (rewinds !== this.rewinds) return [];
      if (any.any === 0) this.phase = this.phases.indexOf(this.owner === undefined ? 'initial' : 'part');
    }
    if (this.after === 0 && BACKWARDS.has(this.phases[this.phase])) this.after = TOP;
    while (out.length < limit && this.phase < this.phases.length) {
      const stmt = this.reads.get(this.phases[this.phase])!;
      const args = this.owner === undefined ? [this.stage, this.after, limit - out.length] : [this.stage, this.after, this.owner, limit - out.length];
      const rows = await stmt.all(...args) as (ApplyStep & { retried: number })[];
      if (rewinds !== this.rewinds) return [];
      for (const r of rows) out.push({ ...r, retried: r.retried === 1 });
      if (rows.length) this.after = rows[rows.length - 1].id;
      if (out.length < limit) {
        this.phase++;
        this.after = BACKWARDS.has(this.phases[this.phase]) ? TOP : 0;
      }
    }
    return out;
  }
}

/** The stages that have a step not ended, in order. */
export async function openStages(db: Db): Promise<number[]> {
  return (await sql(db, `SELECT DISTINCT stage FROM strategy_step WHERE state NOT IN ('complete', 'failed', 'aborted') ORDER BY stage`)
    .pluck()
    .all()) as number[];
}

/** How many steps have failed (the failure budget counts them) and how many there are. */
export async function failedAndTotal(db: Db): Promise<{ failed: number; total: number }> {
  return (await sql(db, `SELECT coalesce(sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) AS failed, count(*) AS total FROM strategy_step`)
    .get()) as { failed: number; total: number };
}

/** The steps of these ids (runs left running by a process that is gone), by id. */
export async function stepsByIds(db: Db, ids: readonly number[]): Promise<Map<number, CursorStep>> {
  const stmt = sql(db, `SELECT ${COLUMNS} FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE st.id = $1`);
  const out = new Map<number, CursorStep>();
  for (const id of ids) {
    const r = await stmt.get(id) as ApplyStep | undefined;
    if (r) out.set(id, { ...r, retried: false });
  }
  return out;
}
