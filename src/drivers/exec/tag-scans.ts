/**
 * The search of /proc for a run's processes by their DCM_RUN_ID, shared by the runs that end in
 * the same turn of the event loop: every run that ends is looked for (its processes may have left
 * its group), and a scan reads every process's stat, so one scan for all of them rather than one
 * each (at 50 runs in flight the machine has hundreds of processes).
 */
import { processesWithEnv } from '../../platform/proc.js';

interface Ask {
  since: number;
  resolve: (pids: number[]) => void;
}

export class TagScans {
  private asks = new Map<string, Ask[]>();
  private scheduled = false;

  /** The live processes carrying `runId`, started at or after `since` (ticks), at the next scan. */
  find(runId: string, since: number): Promise<number[]> {
    return new Promise((resolve) => {
      const list = this.asks.get(runId);
      if (list) list.push({ since, resolve });
      else this.asks.set(runId, [{ since, resolve }]);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.scan());
      }
    });
  }

  private scan(): void {
    this.scheduled = false;
    const asks = this.asks;
    this.asks = new Map();
    let since = Infinity;
    for (const list of asks.values()) for (const a of list) since = Math.min(since, a.since);
    const found = processesWithEnv('DCM_RUN_ID', new Set(asks.keys()), Number.isFinite(since) ? since : 0);
    for (const [runId, list] of asks) for (const a of list) a.resolve(found.get(runId) ?? []);
  }
}
