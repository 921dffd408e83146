/**
 * What the store must show, read on the world's own connection: after every commit, that no step
 * that ended complete was reopened; at the end, that the strategy ended with every step ended and
 * nothing left going at the sites. (The sites judge what they received themselves: sites.ts.)
 * It only reads; a violation is the sites' record of it, with theirs.
 */
import type { Db } from '../store/open.js';
import { sql } from '../store/statements.js';
import { getStrategy } from '../store/strategy.js';
import { STRATEGY_ENDED as ENDED } from '../domain/types.js';
import type { Sites } from './sites.js';

export class Judge {
  private readonly completed = new Set<number>();

  constructor(private readonly sites: Sites) {}

  /** No step that ended complete is ever reopened (a retry reopens failed and aborted ones only). */
  async afterCommit(db: Db): Promise<void> {
    const rows = await sql(db, 'SELECT id, state FROM strategy_step').all() as { id: number; state: string }[];
    for (const r of rows) {
      if (r.state === 'complete') this.completed.add(r.id);
      else if (this.completed.has(r.id)) this.sites.violation('step-reopened', `step ${r.id} was complete and is ${r.state}`);
    }
  }

  /** The schedule is over (`after`: how long it was given, said when the strategy did not end). */
  async atEnd(db: Db, after: string): Promise<void> {
    await this.afterCommit(db);
    const state = (await getStrategy(db))?.state ?? 'none';
    if (!ENDED.includes(state)) this.sites.violation('not-ended', `the strategy is ${state} after ${after}`);
    const open = await db.prepare(`SELECT COUNT(*) FROM strategy_step WHERE state NOT IN ('complete', 'failed', 'aborted')`).pluck().get() as number;
    if (ENDED.includes(state) && open) this.sites.violation('lost-step', `${open} step(s) not ended in a ${state} strategy`);
    for (const e of this.sites.stillRunning()) this.sites.violation('left-going', `${e.site} ${e.state}#${e.attempt} still runs after the end`);
  }
}
