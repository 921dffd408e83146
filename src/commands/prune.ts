/**
 * `dcm db prune --older DURATION [--dry-run]`: remove the strategies `strategy delete` kept
 * (store/archive.ts) that were deleted more than DURATION ago, and with each its run log folder
 * (`DIR/<strategy id>`): a log without its strategy's record is what `db prune-logs` is for, and
 * an operator pruning a strategy means to be rid of it. The current strategy is never touched.
 */
import fs from 'node:fs';
import { ageOption } from '../domain/durations.js';
import { OperationError } from '../domain/errors.js';
import { layoutOf, strategyLogDir } from '../domain/logs.js';
import { timeAt } from '../store/clock.js';
import { archivedBefore, removeArchived } from '../store/archive.js';
import { windowClock } from '../orchestrator/test-env.js';
import { runtimeOf, withExistingWriteDb, type Ctx } from './context.js';
import { looksLikeStrategyFolder, measure } from './prune-logs.js';
import type { Outcome } from './results.js';

export interface PruneStrategiesOptions {
  /** As typed: `30d`, `12h`, `0`. */
  older: string;
  dryRun?: boolean;
}

function counted(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The strategy's own log folder (layout 2) when it is there; a layout-1 folder is shared, never its. */
function logFolderOf(s: { created_at: string; extra: Record<string, unknown> }, dbPath: string): string | null {
  const layout = layoutOf(s, dbPath);
  if (layout.version !== 2) return null;
  const dir = strategyLogDir(layout.dir, layout.strategy);
  return looksLikeStrategyFolder(dir) ? dir : null;
}

export async function pruneStrategies(ctx: Ctx, opts: PruneStrategiesOptions): Promise<Outcome> {
  // The option on its own first, as a usage error, before the file is read.
  const ageMs = ageOption('--older', opts.older);
  // The test clock (DCM_TEST_HOOKS=1 DCM_TEST_CLOCK=ISO) ages the records without waiting.
  const cutoff = timeAt(windowClock(process.env, runtimeOf(ctx).clock)() - ageMs);
  const found = await withExistingWriteDb(ctx, async (db) => {
    const old = await archivedBefore(db, cutoff);
    if (!opts.dryRun) await removeArchived(db, old.map((s) => s.id));
    return old;
  });
  if (found === null) throw new OperationError(`${ctx.dbPath} does not exist`);
  const verb = opts.dryRun ? 'would remove' : 'removed';
  const notes: string[] = [];
  let folders = 0;
  let bytes = 0;
  for (const s of found) {
    notes.push(`${verb} strategy ${s.id} (${s.type}, ${s.state}, deleted ${s.deleted_at})`);
    const dir = logFolderOf(s, ctx.dbPath);
    if (dir === null) continue;
    try {
      bytes += measure(dir).bytes;
      if (!opts.dryRun) fs.rmSync(dir, { recursive: true });
    } catch (err) {
      // The records are gone already (committed above): `db prune-logs` removes what is left.
      throw new OperationError(`cannot remove ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    folders += 1;
    notes.push(`${verb} ${dir}`);
  }
  return {
    text: `${verb} ${counted(found.length, 'deleted strategy', 'deleted strategies')} and ${counted(folders, 'log folder', 'log folders')} (${bytes} bytes)\n`,
    notes,
  };
}
