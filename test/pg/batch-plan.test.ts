/**
 * The plan of a worker's batch on a server (store/pg/transitions.ts WRITE): every row it changes
 * is looked up by key, never found by reading a whole table. The planner counts the batch's rows
 * (a JSON array) as a hundred, and against a strategy of a few thousand steps it chose to read
 * `strategy_step` whole and hash it, in every batch: a cost that grows with the fleet, not with
 * the batch (issue 51). Asked of the plan the server keeps for the prepared statement (its generic
 * one, the plan a worker's batches use once it has run a few times).
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { dcmOk, tempDir } from '../helpers/cli.js';
import { names } from '../helpers/history.js';
import { SyncPg } from '../helpers/sync-pg.js';
import { WRITE } from '../../src/store/pg/transitions.js';

let t: ReturnType<typeof tempDir>;
let look: SyncPg;

beforeAll(() => {
  t = tempDir('dcm-batch-plan-');
  dcmOk(['--db', t.db, 'subcloud', 'add', ...names(3000)]);
  dcmOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--max-parallel-subclouds', '500']);
  // Applied, so that the history has the runs a long strategy has (the plan is judged with them).
  dcmOk(['--db', t.db, '-q', 'strategy', 'apply']);
  look = new SyncPg(t.db);
  look.query('ANALYZE');
}, 120_000);
afterAll(() => {
  look?.close();
  t?.cleanup();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every table the plan reads whole (a sequential scan), with how often. */
function scannedWhole(node: PlanNode, out: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan' && node['Relation Name']) out.push(node['Relation Name']);
  for (const p of node.Plans ?? []) scannedWhole(p, out);
  return out;
}

test('a batch of transitions reads no table whole: its steps, runs and subclouds are looked up by key', () => {
  const steps = look.query('SELECT id, subcloud_id FROM strategy_step ORDER BY id LIMIT 50').rows as { id: number; subcloud_id: number }[];
  expect(steps).toHaveLength(50);
  const batch = steps.map((s) => ({ id: s.id, from_state: 'initial', to_state: 'pre check', details: '', attempt: 0, ended: false, subcloud: s.subcloud_id, done: null }));
  look.query('SET plan_cache_mode = force_generic_plan');
  look.query(`PREPARE batch (json, text, json) AS ${WRITE}`);
  const [row] = look.query(`EXPLAIN (FORMAT JSON) EXECUTE batch ('${JSON.stringify(batch)}', '2026-12-07 00:00:00.000000', '[]')`).rows as { 'QUERY PLAN': { Plan: PlanNode }[] }[];
  const plan = row['QUERY PLAN'][0].Plan;
  expect(scannedWhole(plan)).toEqual([]);
});
