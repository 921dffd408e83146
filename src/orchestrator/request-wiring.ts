/**
 * The requests from other shells, wired to the orchestrator's parts (orchestrator.ts): requests.ts
 * finds them in the store, control.ts, the stages and the pacer carry them out.
 */
import type { CommitLoop } from './commit-loop.js';
import type { Control } from './control.js';
import type { Fleet } from './fleet.js';
import type { OrchestratorOptions } from './options.js';
import { ExternalRequests, type Snapshot } from './requests.js';
import type { Runtime } from './runtime.js';
import type { Stages } from './stages.js';
import type { TakeoverHandler } from './takeover.js';

export function watchRequests(
  rt: Runtime,
  parts: { control: Control; loop: CommitLoop; stages: Stages; fleet: Fleet; takeover: TakeoverHandler },
  opts: Pick<OrchestratorOptions, 'pollMs' | 'checkFile'>,
  snap: Snapshot,
): ExternalRequests {
  const { control: c, loop, stages, fleet, takeover } = parts;
  return new ExternalRequests(
    rt.db,
    {
      // Seen only once its effect has committed: a busy store throws, and the poll asks again.
      abort: () => c.abortSeen((fn) => loop.committer.tryWrite(fn), false),
      abortNow: () => c.abortSeen((fn) => loop.committer.tryWrite(fn), true),
      pause: (on) => c.setPaused(on),
      window: (stage, w) => stages.setWindow(stage, w, loop),
      rate: (stage, stored) => loop.pacer.changed(stage, stored, () => stages.pump()),
      budget: (text) => c.setBudget(text, true),
      fail: (err) => c.fail(err),
      busy: (err) => loop.committer.isBusy(err),
      ended: () => c.endedElsewhere(),
      changed: async () => {
        // One of several workers: the failures the others committed count toward the budget.
        if (fleet.shared) await takeover.countFailures();
        const budget = stages.stageBudget;
        if (budget && await stages.gates?.refreshBudget(budget)) stages.pump();
        // A gate waiting out a soak looks again: `strategy update` may have changed it.
        stages.gates?.wake();
      },
    },
    { pollMs: opts.pollMs, checkFile: opts.checkFile, rt },
    snap,
  );
}
