/**
 * `dcm subcloud probe [NAMES...|--group G|--all]` (issue 18, "Sites that answer"): ask each site
 * whether it answers, a window of them at a time, and record what they said as the subclouds'
 * availability (`online` when it answered, `offline` when not) in one write once all have
 * answered or given up. `strategy create --probe` asks the same before it plans.
 */
import pLimit from 'p-limit';
import { EXIT, OperationError, UsageError } from '../domain/errors.js';
import { fieldTexts } from '../domain/fields.js';
import { readLabels } from '../domain/inventory.js';
import { findGroup } from '../store/groups.js';
import { listSubclouds, type SubcloudRow } from '../store/subclouds.js';
import { recordAvailability, type ProbedSite } from '../store/availability.js';
import { parseDriverName } from '../drivers/index.js';
import { proberFromOptions, type Prober, type ProbeResult } from '../drivers/probe.js';
import { immediate, withReadDb, withWriteDb, type Ctx } from './context.js';
import { mustFindAll } from './subclouds.js';
import { list } from './plain-results.js';
import type { Outcome } from './results.js';

/** Probes at once when `--max-parallel` is not given: many sites, few processes. */
export const DEFAULT_PROBE_PARALLEL = 20;

export interface ProbeInput {
  names: string[];
  group?: string;
  all?: boolean;
  maxParallel?: number;
  driver?: string;
  execConfig?: string;
}

export interface Probed {
  id: number;
  name: string;
  result: ProbeResult;
}

/** Probe `rows`, at most `parallel` at once, in the rows' order. */
export async function probeRows(prober: Prober, rows: readonly SubcloudRow[], parallel: number): Promise<Probed[]> {
  const limit = pLimit(Math.max(1, parallel));
  return Promise.all(
    rows.map((row) =>
      limit(async () => ({
        id: row.id,
        name: row.name,
        result: await prober({ cloud: row.name, fields: fieldTexts(row), labels: readLabels(row.labels) }).catch(
          (err: Error): ProbeResult => ({ answered: false, detail: `the probe failed: ${err.message}` }),
        ),
      })),
    ),
  );
}

/** As the store records them. */
export function probedSites(probed: readonly Probed[]): ProbedSite[] {
  return probed.map((p) => ({ id: p.id, answered: p.result.answered }));
}

export async function subcloudProbe(ctx: Ctx, input: ProbeInput): Promise<Outcome> {
  const ways = [input.names.length > 0, input.group !== undefined, Boolean(input.all)].filter(Boolean).length;
  if (ways === 0) throw new UsageError('name the subclouds to probe, or give --group G or --all');
  if (ways > 1) throw new UsageError('give subcloud names, --group or --all: one of them');
  const parallel = input.maxParallel ?? DEFAULT_PROBE_PARALLEL;
  if (!Number.isInteger(parallel) || parallel < 1 || parallel > 1000) {
    throw new UsageError(`Invalid --max-parallel value: ${parallel}. It must be between 1 and 1000`);
  }
  const prober = await proberFromOptions(parseDriverName(input.driver), { execConfig: input.execConfig }, ctx.dbPath);
  const rows = await withReadDb(ctx, null as SubcloudRow[] | null, async (db) => {
    if (input.all) return await listSubclouds(db);
    if (input.group !== undefined) {
      const g = await findGroup(db, input.group);
      if (!g) throw new OperationError(`Subcloud group ${input.group} does not exist`);
      return await listSubclouds(db, g.id);
    }
    const seen = new Set<number>();
    return (await mustFindAll(db, input.names)).filter((r) => !seen.has(r.id) && seen.add(r.id));
  });
  if (rows === null) {
    if (input.names.length) throw new OperationError(`Subcloud ${input.names[0]} does not exist`);
    if (input.group !== undefined) throw new OperationError(`Subcloud group ${input.group} does not exist`);
  }
  const chosen = rows ?? [];
  const probed = await probeRows(prober, chosen, parallel);
  const table = list(
    ['name', 'availability', 'detail'],
    probed.map((p) => [p.name, p.result.answered ? 'online' : 'offline', p.result.detail || null]),
  );
  const before = new Map(chosen.map((r) => [r.id, r.availability]));
  // The table is checked against -c inside the write: a bad column records nothing.
  const result = probed.length ? await withWriteDb(ctx, async (db) => await immediate(db, async (tx) => ((await recordAvailability(tx, probedSites(probed), before)), table))) : table;
  const silent = probed.filter((p) => !p.result.answered);
  return {
    result,
    exitCode: silent.length ? EXIT.failed : EXIT.ok,
    warnings: silent.length ? [`${silent.length} of ${probed.length} subcloud(s) did not answer: ${silent.map((p) => p.name).join(', ')}`] : undefined,
  };
}
