/**
 * Runs of another host's worker that this one took over (several hosts, README): nothing here can
 * see or stop them, and they may still be going. Their result is the one their host's launcher
 * writes to the store as each ends (`run_end`), taken as an adopted run's result is: never run
 * again for an end that was only not seen.
 *
 * A host is proven gone only by what cannot lie: its launcher's end in the store, or the
 * operator's word. So once a run cannot be going any more by its own host's rules (its state's
 * timeout and grace, which its launcher enforces with or without its worker, counted from the
 * takeover on this worker's monotonic clock: no wall clock, and no clock between hosts, is
 * trusted) and no end has come, it is held as of unknown outcome, never run again by itself: its
 * host may be frozen or cut off with it, and go on when it wakes. The wait for its end goes on;
 * the operator says how it ended (`strategy-step resolve`) or that it runs again (`strategy
 * retry`). A state whose config says `on_lost_host: rerun` is run again at the bound instead, as the
 * next attempt with a new DCM_FENCE: at least once, which the site's own fence check makes safe.
 * A run of a state with no timeout (`timeout: none`) has no bound: it is held at once.
 *
 * Owns only its looks at the store. Never touches: the registry or the steps (its answer is the
 * run's result, settled by the orchestrator as an adopted run's).
 */
import type { OperationResult, RemoteRun } from '../drivers/driver.js';
import { formatDuration } from '../domain/durations.js';
import type { Actor } from '../platform/who.js';
import { abandonRemoteRun, markRunUnknown, retriedBy, runEnd, type LeftRunRow } from '../store/runs.js';
import type { Runtime } from './runtime.js';

/** How often the store is asked for the end of a run another host has. */
const LOOK_MS = 1_000;

/** Why a run is held, as its history row and its step's line say it. */
function heldWhy(left: LeftRunRow, runHost: string, boundMs: number): string {
  const how = `\`dcm strategy-step resolve ${left.cloud} --as ok|failed\` or \`dcm strategy retry ${left.cloud}\``;
  return Number.isFinite(boundMs)
    ? `its host (${runHost}) has not said how the run ended within ${formatDuration(boundMs)} (its state's timeout and grace): held, not run again, until its host says or ${how}`
    : `its host (${runHost}) is gone without saying how the run ended, and ${left.state} has no timeout: held until ${how}`;
}

/**
 * The result of `left` once its host writes it. `waits` holds how to stop looking while it waits:
 * the orchestrator stops them all as it ends (its lease lost, a second Ctrl-C), leaving the run to
 * whoever applies next, and no look left to keep the process alive.
 */
export function waitRemote(rt: Runtime, left: LeftRunRow, remote: RemoteRun, host: string, waits: Set<() => void>, who?: Actor): Promise<OperationResult> {
  // Monotonic: a step of this host's wall clock moves no bound.
  const deadline = rt.clock.mono() + remote.maxLeftMs;
  const runHost = left.host ?? 'unknown';
  return new Promise((resolve) => {
    let done = false;
    let claimed = false;
    let held = false;
    const stop = () => {
      done = true;
      timer.clear();
      waits.delete(stop);
    };
    const hold = async () => {
      held = true;
      const why = heldWhy(left, runHost, remote.maxLeftMs);
      try {
        await markRunUnknown(rt.db, left, why, who);
      } catch {
        held = false; // a busy store or a lost connection: the next look
      }
    };
    const look = async () => {
      if (done) return;
      let end;
      let givenUp = false;
      try {
        end = await runEnd(rt.db, remote.key);
        // Once: a run its worker committed and its launcher never claimed is given up here, so it
        // can never start there after all; the first claim wins (the launcher's, or this one).
        if (!end && !claimed) {
          givenUp = await abandonRemoteRun(rt.db, remote.key, host);
          claimed = true;
        }
      } catch {
        return; // a busy store or a lost connection: the next look
      }
      if (givenUp) {
        stop();
        resolve({ kind: 'retry', outcome: 'interrupted', reason: `the run was never started on ${left.host ?? 'its host'} (its worker stopped first)`, delayMs: 0 });
      } else if (end) {
        stop();
        const by = retriedBy(end);
        if (by === null) resolve(remote.outcome(end));
        else resolve({ kind: 'retry', outcome: 'interrupted', reason: `run again by ${by} (strategy retry): its host (${runHost}) never said how it ended`, delayMs: 0 });
      } else if (!held && (!Number.isFinite(remote.maxLeftMs) || rt.clock.mono() >= deadline)) {
        if (remote.rerunAfterBound && Number.isFinite(remote.maxLeftMs)) {
          stop();
          resolve({
            kind: 'retry',
            outcome: 'interrupted',
            reason: `its host (${runHost}) never said how the run ended; after ${formatDuration(remote.maxLeftMs)} it runs again, as its state says (on_lost_host: rerun)`,
            delayMs: 0,
          });
        } else await hold();
      }
    };
    const timer = rt.timers.every(look, LOOK_MS);
    waits.add(stop);
    rt.timers.soon(look);
  });
}
