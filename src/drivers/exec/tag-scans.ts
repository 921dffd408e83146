/**
 * The search of /proc when runs end, shared by the runs that end in the same turn of the event
 * loop. Each ended run asks two things: is its process group gone (a `tee` finishing stderr may
 * still be there, or be a zombie that only process 1 reaps: a zombie counts as gone), and which
 * processes carry its DCM_RUN_ID (they may have left its group). A pass reads every process's stat,
 * so one pass answers every question of the turn rather than one or more per run (at 50 runs in
 * flight the machine has hundreds of processes).
 */
import { scanProcesses } from '../../platform/proc.js';

export interface RunProcesses {
  /** Live members of the run's process group (none when it was not asked or the group is gone). */
  group: number[];
  /** Live processes carrying the run's DCM_RUN_ID, in or out of its group. */
  tagged: number[];
}

/** A run going, as its driver knows it. */
export interface GoingRun {
  runId: string;
  pgid: number;
  /** Its group leader's start time (clock ticks since boot). */
  leaderStart: number;
}

interface Ask {
  runId: string;
  since: number;
  pgid: number | null;
  resolve: (found: RunProcesses) => void;
}

export class TagScans {
  private asks: Ask[] = [];
  private scheduled = false;

  /**
   * `going`: the runs still going, each with its process group and its leader's start time
   * (platform/proc.ts scanProcesses: their members' environments need no read). None by default.
   */
  constructor(private readonly going: () => Iterable<GoingRun> = () => []) {}

  /**
   * The live processes carrying `runId`, started at or after `since` (ticks), and with `pgid` the
   * live members of that group, at the next pass.
   */
  find(runId: string, since: number, pgid: number | null = null): Promise<RunProcesses> {
    return new Promise((resolve) => {
      this.asks.push({ runId, since, pgid, resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.scan());
      }
    });
  }

  private scan(): void {
    this.scheduled = false;
    const asks = this.asks;
    this.asks = [];
    let since = Infinity;
    const groups = new Set<number>();
    for (const a of asks) {
      since = Math.min(since, a.since);
      // kill(-pgid, 0) failing proves the group empty without a look at /proc.
      if (a.pgid !== null && a.pgid > 0 && groupExists(a.pgid)) groups.add(a.pgid);
    }
    // A run asked about is never among the others, by its id or by its group, whatever its group's state.
    const askedIds = new Set(asks.map((a) => a.runId));
    const askedGroups = new Set(asks.map((a) => a.pgid));
    const others = new Map<number, number>();
    for (const g of this.going()) if (!askedIds.has(g.runId) && !askedGroups.has(g.pgid)) others.set(g.pgid, g.leaderStart);
    const found = scanProcesses('DCM_RUN_ID', new Set(asks.map((a) => a.runId)), Number.isFinite(since) ? since : 0, groups, others);
    for (const a of asks) {
      a.resolve({ group: a.pgid === null ? [] : (found.members.get(a.pgid) ?? []), tagged: found.tagged.get(a.runId) ?? [] });
    }
  }
}

/** Whether the kernel has any process (a zombie too) in the group; EPERM: someone else's group, not ours. */
function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
