/**
 * Issue 49, item 5: a subcloud unmanaged or set offline while a strategy has a step for it is kept
 * out from its next state on (the orchestrator reads it as it starts each operation, store/
 * transitions.ts siteOut). `subcloud unmanage` and `subcloud update --management unmanaged`
 * (or `--availability offline`) say so on stderr, so that an operator who took a site out knows
 * what becomes of its step.
 */
import { STRATEGY_ENDED } from '../domain/types.js';
import type { Db } from '../store/open.js';
import { sql } from '../store/statements.js';
import { getStrategy } from '../store/strategy.js';

/** The warning for `subclouds` now `out` (unmanaged, offline), or null when none has a step still to run. */
export async function takenOutWarning(db: Db, subclouds: readonly { id: number; name: string }[], out: string): Promise<string | null> {
  const s = await getStrategy(db);
  if (!s || STRATEGY_ENDED.includes(s.state)) return null;
  const stmt = sql(db, 'SELECT state FROM strategy_step WHERE subcloud_id = $1').pluck();
  const open: string[] = [];
  for (const sc of subclouds) {
    const state = (await stmt.get(sc.id)) as string | undefined;
    if (state !== undefined && !STRATEGY_ENDED.includes(state)) open.push(`${sc.name} (${state})`);
  }
  if (open.length === 0) return null;
  const names = open.slice(0, 5).join(', ') + (open.length > 5 ? ` and ${open.length - 5} more` : '');
  return (
    `${names} ${open.length === 1 ? 'has a step' : 'have steps'} in the ${s.state} ${s.type} strategy: while ${out}, ` +
    `none of ${open.length === 1 ? 'its' : 'their'} states is started (the step fails at its next state, saying so; a run in flight goes on to its end)`
  );
}
