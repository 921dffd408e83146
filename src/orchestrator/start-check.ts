/**
 * The check a commit that starts subclouds makes in its own transaction (commit-loop.ts): the
 * strategy's state (a stop committed since the last poll stops it there), the stage's start rate,
 * and, one of several workers, the claims of the subclouds it starts.
 */
import { NO_NEW_SUBCLOUDS } from '../domain/control.js';
import type { Transition } from '../domain/transition.js';
import type { Db } from '../store/open.js';
import { strategyState } from '../store/strategy.js';
import { stateAndRate } from '../store/start-rate.js';
import { lockClaims } from '../store/workers.js';
import { StopInFile } from './committer.js';
import type { Fleet } from './fleet.js';
import type { StartPacer } from './pacer.js';

/**
 * This commit's own check, in its transaction after the fence, and only its: another write of
 * the orchestrator's going on meanwhile (an abort's, a takeover's) is not held to it (issue 48:
 * an abort during a takeover met a stop it had itself written, and the worker died of it). A
 * batch that opens a new subcloud reads the strategy's state and the stage's start rate in one
 * statement (a stage without one costs nothing more), and one of several workers claims the
 * subclouds it starts: a stop committed since the last poll stops them here. Those the rate
 * leaves out are named in `paced`.
 */
export function startCheck(
  pacer: StartPacer,
  fleet: Fleet,
  c: { opensNew: boolean; claiming: boolean; firstStarts: Transition[]; stage: number },
  paced: { left: ReadonlySet<number> },
): ((tx: Db) => Promise<ReadonlySet<number> | void>) | undefined {
  if (!c.opensNew && !c.claiming) return undefined;
  return async (tx) => {
    paced.left = new Set();
    // Read once a commit, and only by one that starts subclouds: each read is a round trip on a server.
    let state: string | undefined;
    let allowed = Infinity;
    if (c.opensNew) {
      let r = await stateAndRate(tx, c.stage);
      state = r.state;
      if (NO_NEW_SUBCLOUDS.includes(state ?? '')) throw new StopInFile();
      if (c.firstStarts.length && (r.rate !== null || pacer.perMin(c.stage) !== null)) {
        // The stage's last start is every worker's: on a server, where workers' batches run side
        // by side, one claiming commit at a time reads and moves it (store/workers.ts lockClaims),
        // read again once that lock is held.
        if (c.claiming && await lockClaims(tx)) r = await stateAndRate(tx, c.stage);
        allowed = await pacer.allowance(tx, c.stage, r.rate, r.lastAt);
      }
    } else state = await strategyState(tx);
    if (c.claiming) {
      // One of several workers: the subclouds this commit starts are claimed in it, or none is;
      // of its first starts, as many as the rate allows, passing over those another worker has.
      if (state !== 'applying') throw new StopInFile();
      const ids = new Set(c.firstStarts.map((t) => t.stepId));
      const refused = await fleet.claim(tx, allowed === Infinity ? undefined : { ids, max: allowed });
      if (allowed !== Infinity) pacer.pick(c.firstStarts, refused ?? new Set());
      return refused;
    }
    if (allowed === Infinity) return undefined;
    paced.left = pacer.pick(c.firstStarts, new Set(), allowed);
    return paced.left.size ? paced.left : undefined;
  };
}
