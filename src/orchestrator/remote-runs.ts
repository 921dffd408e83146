/**
 * Runs of another host's worker that this one took over (several hosts, README): nothing here can
 * see or stop them, and they may still be going. Their result is the one their host's launcher
 * writes to the store as each ends (`run_end`), taken as an adopted run's result is: never run
 * again for an end that was only not seen. Once a run cannot be going any more (its state's
 * timeout and grace, which its host enforces with or without its worker, counted from the
 * takeover on this worker's own clock, so no clock between hosts is trusted) and no end has come
 * (the host itself is gone), it runs again as the next attempt. A run of a state with no timeout
 * (`timeout: none`) can be going for ever: it is held, as of unknown outcome, until the operator
 * says how it ended (`strategy-step resolve`) or that it runs again (`strategy retry`).
 *
 * Owns only its looks at the store. Never touches: the registry or the steps (its answer is the
 * run's result, settled by the orchestrator as an adopted run's).
 */
import type { OperationResult, RemoteRun } from '../drivers/driver.js';
import { formatDuration } from '../domain/durations.js';
import { abandonRemoteRun, markRunUnknown, retriedBy, runEnd, type LeftRunRow } from '../store/runs.js';
import type { Runtime } from './runtime.js';
import { whoAmI } from '../platform/who.js';

/** How often the store is asked for the end of a run another host has. */
const LOOK_MS = 1_000;

/**
 * The result of `left` once its host writes it. `waits` holds how to stop looking while it waits:
 * the orchestrator stops them all as it ends (its lease lost, a second Ctrl-C), leaving the run to
 * whoever applies next, and no look left to keep the process alive.
 */
export function waitRemote(rt: Runtime, left: LeftRunRow, remote: RemoteRun, host: string, waits: Set<() => void>): Promise<OperationResult> {
  const deadline = rt.now() + remote.maxLeftMs;
  const forEver = !Number.isFinite(remote.maxLeftMs);
  const runHost = left.host ?? 'unknown';
  return new Promise((resolve) => {
    let done = false;
    let claimed = false;
    let marked = false;
    const stop = () => {
      done = true;
      timer.clear();
      waits.delete(stop);
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
      } else if (forEver && !marked) {
        marked = true;
        const why = `its host (${runHost}) is gone without saying how the run ended, and ${left.state} has no timeout: held until \`dcm strategy-step resolve ${left.cloud} --as ok|failed\` or \`dcm strategy retry ${left.cloud}\``;
        await markRunUnknown(rt.db, left, why, { ...whoAmI(), host }).catch(() => (marked = false));
      } else if (rt.now() >= deadline) {
        stop();
        resolve({
          kind: 'retry',
          outcome: 'interrupted',
          reason: `its host (${runHost}) never said how the run ended; after ${formatDuration(remote.maxLeftMs)} it cannot be going any more`,
          delayMs: 0,
        });
      }
    };
    const timer = rt.timers.every(look, LOOK_MS);
    waits.add(stop);
    rt.timers.soon(look);
  });
}
