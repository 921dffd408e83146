/**
 * The model of the exec driver's launcher (drivers/exec/launcher.ts) as a process of its host:
 * started by a worker for its runs, it outlives the worker (a kill -9 of dcm leaves it and its runs
 * going), and goes with its host (frozen with it, lost with it). For each run it claims the run in
 * the store first (several hosts: a taker may have given it up), starts it at the site, stops it at
 * its state's timeout and grace whether or not its worker lives (the backstop), and writes its end
 * to the store (several hosts), trying again while the store cannot be reached.
 *
 * What it does when it wakes (its host was frozen, or cut off from the store, past the lease): if
 * its worker's lease was lost meanwhile, it stops the runs still going before anything else, and
 * their ends say so: a taker may be holding them as of unknown outcome, and an operator may be
 * about to run them again.
 */
import type { OperationRequest } from '../drivers/driver.js';
import { runIdOf } from '../drivers/exec/run-id.js';
import type { SimHost, SimProcess } from './hosts.js';
import type { LedgerEntry, Sites } from './sites.js';

/** What the launcher writes to the store for its host (several hosts): the world's book of runs. */
export interface RunBook {
  /** True: claimed; false: a worker on another host gave it up first. */
  claim(key: string, host: string): Promise<boolean>;
  ended(key: string, host: string, code: number | null, signal: string | null): Promise<void>;
  /** Whether the worker with this token still holds its row. */
  holds(token: string): Promise<boolean>;
}

/** The state's timeout and the launcher's grace before it stops a run; null: no timeout. */
export interface Backstop {
  killAfterMs: number | null;
  graceMs: number;
  /** The states say `on_lost_host: rerun` (schedule.ts). */
  rerunAfterBound?: boolean;
}

/** A run begun (its entry not ended yet), ended, or not started, as the launcher tells its worker. */
export type RunEnd = { entry: LedgerEntry } | { refused: string };

/** How long a claim is tried while the store cannot be reached (as the exec launcher's). */
const CLAIM_FOR_MS = 60_000;
const RETRY_MS = 1_000;

export class SimLauncher {
  readonly proc: SimProcess;
  private readonly going = new Set<LedgerEntry>();
  private lastTick: number;
  private lastReach: number;

  constructor(
    private readonly host: SimHost,
    private readonly sites: Sites,
    private readonly book: RunBook | null,
    /** The worker's lease: its token and length (several hosts). */
    private readonly lease: { token: string; ms: number } | null,
    private readonly log: (line: string) => void,
    name: string,
  ) {
    this.proc = host.spawn(`launcher of ${name}`);
    const now = host.world.loop.now;
    this.lastTick = now;
    this.lastReach = now;
    if (lease) this.proc.timers.every(() => this.tick(), Math.max(1_000, Math.floor(lease.ms / 3)));
  }

  /** Start `req` at the site (after its claim); `told` hears its end, or why it was not started. */
  start(req: OperationRequest, backstop: Backstop, told: (end: RunEnd) => void): void {
    this.proc.run(() => void this.launch(req, backstop, told));
  }

  /** Stop a run of this launcher's now (its worker asked): as soon as the launcher runs. */
  stop(entry: LedgerEntry): void {
    this.proc.run(() => this.sites.stop(entry));
  }

  /** Stop every run still going (its worker closed without leaving them to a taker). */
  stopAll(): void {
    for (const e of this.going) this.stop(e);
  }

  private async launch(req: OperationRequest, backstop: Backstop, told: (end: RunEnd) => void): Promise<void> {
    const key = runIdOf(req);
    if (this.book) {
      const asked = this.host.world.loop.now;
      const claimed = await this.onStore(() => this.book!.claim(key, this.host.name), CLAIM_FOR_MS);
      // Its claim was tried again (the store busy, or not reached): the run begins after its commit.
      if (this.host.world.loop.now > asked) this.host.world.hit('late-claim');
      if (claimed === null) return told({ refused: 'not started: the database could not be reached to claim the run' });
      if (!claimed) return told({ refused: 'not started: given up by a worker on another host' });
      if (this.proc.dead) return;
    }
    const entry = this.sites.begin(req, this.host.name);
    this.going.add(entry);
    // Its start is told at once (the exec launcher's `{pid}` message): the worker can stop it.
    told({ entry });
    const timers = this.proc.timers;
    const guard = backstop.killAfterMs === null ? null : timers.after(() => this.sites.stop(entry), backstop.killAfterMs + backstop.graceMs);
    entry.ended.push(() =>
      this.proc.run(() => {
        guard?.clear();
        this.going.delete(entry);
        told({ entry });
        if (!this.book) return;
        const code = entry.outcome === 'ok' ? 0 : entry.outcome === 'defer' ? 75 : entry.outcome === 'failed' ? 1 : null;
        void this.onStore(() => this.book!.ended(key, this.host.name, code, code === null ? 'SIGKILL' : null), 3_600_000);
      }),
    );
  }

  /**
   * Its host lost: the runs go with it (their processes killed, no end written). The site
   * stops what it was doing for them.
   */
  lost(): void {
    for (const e of this.going) this.sites.stop(e);
    this.going.clear();
  }

  /**
   * The launcher's own look at its lease (several hosts), each third of it: when it finds it was not
   * running, or not heard by the store, for longer than the lease, it asks whether its worker still
   * holds its row; gone, every run still going is stopped before it can end ok.
   */
  private async tick(): Promise<void> {
    const loop = this.host.world.loop;
    const gap = loop.now - this.lastTick;
    this.lastTick = loop.now;
    if (!this.lease || this.going.size === 0) return;
    const away = Math.max(gap, loop.now - this.lastReach);
    let holds: boolean;
    try {
      if (this.host.cut) return;
      holds = await this.book!.holds(this.lease.token);
      this.lastReach = loop.now;
    } catch {
      return;
    }
    if (holds || away <= this.lease.ms || this.proc.dead) return;
    this.log(`${this.proc.name}: woke after ${Math.round(away / 1000)} s with its worker's lease lost: stops its ${this.going.size} run(s)`);
    for (const e of [...this.going]) this.sites.stop(e);
  }

  /** `fn` on the store, tried again while the host is cut off, until `forMs` has passed (null then). */
  private async onStore<T>(fn: () => Promise<T>, forMs: number): Promise<T | null> {
    const loop = this.host.world.loop;
    const until = loop.now + forMs;
    for (;;) {
      if (!this.host.cut) {
        try {
          const out = await fn();
          this.lastReach = loop.now;
          return out;
        } catch {
          // busy: tried again
        }
      }
      if (loop.now >= until || this.proc.dead) return null;
      await new Promise<void>((r) => this.proc.timers.after(r, RETRY_MS));
    }
  }
}
