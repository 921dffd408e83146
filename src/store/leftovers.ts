/**
 * Files left beside the database by a process that died (SPEC §2.1 "Leftovers").
 *
 * - `PATH-wal` / `PATH-shm` with no `PATH`: the database was removed while a process had it open
 *   (or after a kill -9). SQLite pairs a WAL with whatever file next has the name, and replays its
 *   pages into it: a new database made there is corrupt at once. So none is made.
 * - `PATH.<pid>-<hex>.new` (and its -wal, -shm, -journal): a first write builds the new file under
 *   that name and links it into place (src/commands/context.ts); a kill -9 meanwhile leaves it.
 *   The next command removes those whose process is gone, or that nobody touched for an hour
 *   (a pid may be reused). A first write in progress in another process is never disturbed.
 */
import fs from 'node:fs';
import type { ProcessRuntime } from '../platform/runtime.js';
import path from 'node:path';
import { OperationError } from '../domain/errors.js';

/** Refuse to create a database at `real` when a WAL or shared-memory file of a removed one is there. */
export function refuseOrphanWal(real: string, shown: string): void {
  const wal = fs.existsSync(`${real}-wal`);
  const shm = fs.existsSync(`${real}-shm`);
  if (wal) throw new OperationError(`${shown}-wal is left from a removed database; move it and ${shown}-shm away`);
  if (shm) throw new OperationError(`${shown}-shm is left from a removed database; move it away`);
}

const STALE_MS = 60 * 60 * 1000;

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The temporary name a first write uses for `real` in process `pid`. */
export function tempName(real: string, pid: number, hex: string): string {
  return `${real}.${pid}-${hex}.new`;
}

/**
 * Remove the temporary files of interrupted first writes of `real`. Best effort: a directory we
 * cannot list or write in is left as it is (a reader in a read-only directory still reads).
 * Returns the names removed.
 */
export function removeStaleTemps(real: string, rt: Pick<ProcessRuntime, 'clock' | 'procs'>): string[] {
  const now = rt.clock.wall();
  const dir = path.dirname(real);
  const pattern = new RegExp(`^${escape(path.basename(real))}\\.(\\d+)-[0-9a-f]+\\.new(-wal|-shm|-journal)?$`);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = pattern.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    const file = path.join(dir, name);
    try {
      const old = now - fs.lstatSync(file).mtimeMs > STALE_MS;
      if (pid === rt.procs.self || (rt.procs.alive(pid) && !old)) continue;
      fs.rmSync(file, { force: true });
      removed.push(name);
    } catch {
      /* gone meanwhile, or not ours to remove */
    }
  }
  return removed;
}
