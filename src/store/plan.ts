/**
 * What a plan's digest covers that the store holds (commands/plan-digest.ts): each group's stage
 * defaults as create would fill a stage with them, the stages as create filled them, and the
 * digest kept with the strategy.
 */
import type { Db } from './open.js';
import { sql } from './statements.js';

/** Each group's stage defaults by name (gate, failure budget, start rate): what create fills a stage with. */
export async function groupStageDefaults(db: Db): Promise<Map<string, { max_failures: string | null; gate: string | null; start_rate: string | null }>> {
  const rows = (await sql(
    db,
    'SELECT g.name, d.max_failures, d.gate, d.start_rate FROM subcloud_group_gate d JOIN subcloud_group g ON g.id = d.group_id',
  ).all()) as { name: string; max_failures: string | null; gate: string | null; start_rate: string | null }[];
  return new Map(rows.map((r) => [r.name, r]));
}

/** The stages as create filled them: what a plan's digest covers. */
export async function filledStages(db: Db): Promise<{ stage: number; max_parallel: number; group_name: string | null; max_failures: string | null; gate: string | null; gate_check: string | null; start_rate: string | null }[]> {
  return (await sql(db, 'SELECT stage, max_parallel, group_name, max_failures, gate, gate_check, start_rate FROM strategy_stage ORDER BY stage').all()) as {
    stage: number;
    max_parallel: number;
    group_name: string | null;
    max_failures: string | null;
    gate: string | null;
    gate_check: string | null;
    start_rate: string | null;
  }[];
}

/** The plan's digest kept with the strategy (its extra args), and whether `--plan` pinned it. */
export async function setPlanDigest(db: Db, digest: string, pinned: boolean): Promise<void> {
  const text = (await sql(db, 'SELECT extra_args FROM strategy WHERE id = 1').pluck().get()) as string;
  const extra = { ...(JSON.parse(text) as Record<string, unknown>), plan_digest: digest, plan_pinned: pinned };
  await sql(db, 'UPDATE strategy SET extra_args = $1 WHERE id = 1').run(JSON.stringify(extra));
}
