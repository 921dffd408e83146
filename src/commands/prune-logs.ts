/**
 * `dcm db prune-logs --older DURATION [--dry-run] [--log-dir DIR]`: the run logs of deleted
 * strategies are kept (they are the record of what their runs did), so that they do not pile up
 * for ever this removes the folders (`DIR/<strategy id>`, layout 2) of strategies the database no
 * longer holds whose every file is older than DURATION. The current strategy's folder is never
 * touched, whatever its age; nor are folders of layout 1 (`DIR/<cloud>`), which no strategy owns.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ageOption } from '../domain/durations.js';
import { OperationError, UsageError } from '../domain/errors.js';
import { defaultLogDir, isStrategyFolderName, layoutOf, strategyIdOf, strategyLogDir } from '../domain/logs.js';
import { getStrategy } from '../store/strategy.js';
import { withReadDb, type Ctx } from './context.js';
import type { Outcome } from './results.js';

export interface PruneOptions {
  /** As typed: `30d`, `12h`, `0`. */
  older: string;
  dryRun?: boolean;
  /** Another folder to prune as well (a `--log-dir` given at create, once its strategy is gone). */
  logDir?: string;
}

interface Found {
  dir: string;
  bytes: number;
  /** The newest mtime of its files (epoch ms); -Infinity when it holds none. */
  newest: number;
}

/** The bytes and the newest file of a folder, without following symlinks. */
export function measure(dir: string): Omit<Found, 'dir'> {
  let bytes = 0;
  let newest = -Infinity;
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const st = fs.lstatSync(p);
      if (e.isDirectory()) {
        walk(p);
        continue;
      }
      bytes += st.size;
      newest = Math.max(newest, st.mtimeMs);
    }
  };
  walk(dir);
  return { bytes, newest };
}

/** A strategy's folder holds only its subclouds' folders; a layout-1 subcloud folder holds files. */
export function looksLikeStrategyFolder(dir: string): boolean {
  try {
    return fs.readdirSync(dir, { withFileTypes: true }).every((e) => e.isDirectory());
  } catch {
    return false;
  }
}

function listStrategyFolders(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return []; // no folder: nothing was ever logged there
  }
  return names.filter(isStrategyFolderName).map((n) => strategyLogDir(dir, n));
}

/** `1 log folder`, `2 log folders`. */
function folders(n: number): string {
  return `${n} log folder${n === 1 ? '' : 's'}`;
}

export async function pruneLogs(ctx: Ctx, opts: PruneOptions): Promise<Outcome> {
  // The option on its own first, as a usage error, before the file is read.
  const ageMs = ageOption('--older', opts.older);
  if (opts.logDir === '') throw new UsageError("option '--log-dir' is empty: name a folder");
  const current = await withReadDb(ctx, null, async (db) => {
    const s = await getStrategy(db);
    return { strategy: s ? { id: strategyIdOf(s.created_at), dir: layoutOf(s, ctx.dbPath).dir } : null };
  });
  if (current === null) throw new OperationError(`${ctx.dbPath} does not exist`);
  const dirs = [
    ...new Set([current.strategy?.dir, path.resolve(defaultLogDir(ctx.dbPath)), opts.logDir === undefined ? undefined : path.resolve(opts.logDir)]),
  ].filter((d): d is string => d !== undefined);
  const cutoff = Date.now() - ageMs;
  const chosen: Found[] = [];
  for (const dir of dirs) {
    for (const folder of listStrategyFolders(dir)) {
      // The current strategy's runs write here, now or at its next apply.
      if (path.basename(folder) === current.strategy?.id) continue;
      if (!looksLikeStrategyFolder(folder)) continue;
      let m: Omit<Found, 'dir'>;
      try {
        m = measure(folder);
      } catch {
        continue; // changing under us (a file gone as it was read) or unreadable: not provably old
      }
      if (m.newest < cutoff) chosen.push({ dir: folder, ...m });
    }
  }
  if (!opts.dryRun) {
    for (const f of chosen) {
      try {
        fs.rmSync(f.dir, { recursive: true });
      } catch (err) {
        throw new OperationError(`cannot remove ${f.dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
    }
  }
  const bytes = chosen.reduce((sum, f) => sum + f.bytes, 0);
  const verb = opts.dryRun ? 'would remove' : 'removed';
  return {
    text: `${verb} ${folders(chosen.length)} of deleted strategies (${bytes} bytes)\n`,
    notes: chosen.map((f) => `${verb} ${f.dir}`),
  };
}
