/** What probes said of the sites, recorded as the subclouds' availability (issue 18, "Sites that answer"). */
import type { Db } from './open.js';
import { updateSubcloud } from './subclouds.js';

export interface ProbedSite {
  id: number;
  answered: boolean;
}

/** `online` when it answered, `offline` when not; only the rows that change are written. */
export async function recordAvailability(db: Db, probed: readonly ProbedSite[], before: ReadonlyMap<number, string>): Promise<void> {
  for (const p of probed) {
    const availability = p.answered ? 'online' : 'offline';
    if (before.get(p.id) !== availability) await updateSubcloud(db, p.id, { availability });
  }
}
