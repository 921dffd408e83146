/**
 * One of several workers, as its heartbeat sees the others: the fleet shown in the progress views
 * and this worker's share of the window, and the workers its heartbeat took over (workers.ts) —
 * the runs it now holds are adopted, those cut off are closed, and the running stage is read
 * again for what was let go.
 *
 * Owns nothing of its own: it reads the store and tells the stages, the fleet and control. Never
 * touches: the registry's map (adopted runs get their entries when their subcloud has its slot).
 */
import type { RunObserver } from './observer.js';
import { failedAndTotal } from '../store/cursor.js';
import { stageStateCounts } from '../store/status.js';
import type { adoptLeftRuns } from './adoption.js';
import type { Control } from './control.js';
import type { Fleet } from './fleet.js';
import type { ProgressSink } from './progress.js';
import type { Runtime } from './runtime.js';
import type { Stages } from './stages.js';
import type { TakenOver } from './workers.js';

export interface TakeoverHost {
  /** Adopt the runs this worker now holds (orchestrator.ts). */
  adoptLeft(): ReturnType<typeof adoptLeftRuns>;
  /** A subcloud read before it was taken over, waiting for its first claim: its queued start goes. */
  held(stepId: number): void;
  /** Close runs cut off (their process is gone) as interrupted, in a fenced write. */
  closeInterrupted(historyIds: number[]): Promise<unknown>;
  /** Runs were closed as interrupted: their next runs are told they were cut off. */
  resumedAgain(): Promise<void>;
  /** A store error a view can wait out (busy), said once. */
  busy(err: unknown): boolean;
  /** Told of each worker taken over (the traces' span events). */
  observer?: RunObserver;
}

export class TakeoverHandler {
  constructor(
    private readonly rt: Runtime,
    private readonly fleet: Fleet,
    private readonly stages: Stages,
    private readonly control: Control,
    private readonly progress: ProgressSink,
    private readonly host: TakeoverHost,
  ) {}

  /**
   * The share of the window follows the workers there are, and the progress views count every
   * worker's steps, not only this one's (read with each heartbeat, a few statements every few seconds).
   */
  async showFleet(): Promise<void> {
    if (!this.fleet.shared || this.control.done()) return;
    const db = this.rt.db;
    try {
      const live = await this.fleet.live(db);
      this.stages.followShare(live.map((w) => ({ id: w.id, cap: w.max_local })));
      this.progress.fleet?.({ workers: live.length, inFlightElsewhere: await this.fleet.inFlightElsewhere(db), counts: await stageStateCounts(db) });
    } catch (err) {
      // A view is not worth a stop: a busy store shows the fleet at the next beat.
      if (!this.host.busy(err)) await this.control.fail(err as Error);
    }
  }

  /** Workers were taken over by this one's heartbeat. */
  async takenOver(taken: readonly TakenOver[]): Promise<void> {
    if (this.control.done() || !taken.length) return;
    for (const t of taken) {
      this.progress.note(`took over the worker pid ${t.worker.pid} on ${t.worker.host} (${t.why}): ${t.adopted} run(s) adopted, ${t.interrupted} interrupted to run again`);
      const w = { 'dcm.worker.pid': t.worker.pid, 'dcm.worker.host': t.worker.host, 'dcm.why': t.why, 'dcm.adopted': t.adopted, 'dcm.interrupted': t.interrupted };
      this.host.observer?.event('worker taken over', w);
    }
    // Runs closed as interrupted run again told so (DCM_RESUMED), once the stage is read again.
    const readAgain = async () => {
      try {
        await this.host.resumedAgain();
      } catch (err) {
        await this.control.fail(err as Error);
        return;
      }
      this.stages.rescan();
    };
    if (taken.some((t) => t.adopted > 0)) {
      try {
        const left = await this.host.adoptLeft();
        for (const [id, a] of left.adopted) {
          if (this.stages.hasSlot(id)) {
            // Read before it was taken over and waiting for its first claim, which would now be
            // refused (or start a second run): held back instead, its slot runs the adopted run.
            this.host.held(id);
            this.stages.release(id, false);
          } else this.stages.add(a.step);
        }
        if (left.interrupted.length) {
          // Cut off (their process is gone): closed first, so that the next start of their state
          // is not refused for a run still `running`.
          void this.host.closeInterrupted(left.interrupted).then(readAgain, (err: Error) => this.control.fail(err));
          return;
        }
      } catch (err) {
        await this.control.fail(err as Error);
        return;
      }
    }
    await readAgain();
  }

  /** The strategy's failed steps, every worker's: the budget counts them all. */
  async countFailures(): Promise<void> {
    this.control.failedElsewhere((await failedAndTotal(this.rt.db)).failed);
  }
}
