/**
 * The launcher's look at its clocks (launcher.ts says why: a host woken past its worker's lease
 * stops the runs whose worker was taken over meanwhile, before any of their ends is told). Here:
 * when the launcher was away (a monotonic tick later than the lease, or the time since boot,
 * which counts a suspended machine's sleep), the one question to the store, asked again while it
 * cannot be answered, and what waits for its answer. The store's query and the stop of a run are
 * the launcher's.
 */
import fs from 'node:fs';

/** A run going, as the check needs it. */
export interface Watched {
  /** The token of the worker that started it (DCM_FENCE before its last '.'); '' for none. */
  token: string;
  cloud: string;
  /** Why it was stopped as its host woke, and that stop (its whole tree gone once settled). */
  stopped: { why: string; done: Promise<void> } | null;
}

export interface WakeDeps<R extends Watched> {
  /** This host's name, for what is said. */
  host: string;
  /** The runs going now. */
  runs(): R[];
  /** Of these workers' tokens and their runs' subclouds, those taken over: their 1-based places. */
  takenOver(tokens: string[], clouds: string[]): Promise<number[]>;
  /** Stop a run, its whole tree, saying `why`; returns when that stop is done. */
  stop(run: R, why: string): Promise<void>;
  /** The store could not be asked (it is asked again at the next tick). */
  failed(err: unknown): void;
}

/** How often the launcher looks at its clocks (a quarter of the lease when that is shorter). */
const TICK_MS = 500;
/** How long a wake's check is asked of a store that cannot be reached, as long as an end is tried for. */
const WAKE_CHECK_FOR_MS = 3_600_000;

/**
 * Milliseconds since boot, a suspended system's sleep included (CLOCK_BOOTTIME, which the
 * monotonic clock leaves out); null where /proc/uptime cannot be read.
 */
function bootMs(): number | null {
  try {
    return Number(fs.readFileSync('/proc/uptime', 'latin1').split(' ')[0]) * 1000;
  } catch {
    return null;
  }
}

const secs = (ms: number) => `${Number((ms / 1000).toFixed(ms < 10_000 ? 1 : 0))} s`;

export class WakeCheck<R extends Watched> {
  private lastMono = performance.now();
  private lastBoot = bootMs() ?? 0;
  /** How long the launcher was away, while the store has not said whether its runs' workers were taken over (0: nothing to ask). */
  private awayMs = 0;
  /** When (the monotonic clock) the wake being checked was seen. */
  private wokeAt = 0;
  private checking = false;
  /** What waits for the store's answer to a wake's check: a run's exit, its timeout's backstop. */
  private answered: (() => void)[] = [];

  /** Looks at the clocks from now on (never keeping the launcher alive for it). */
  constructor(
    private readonly leaseMs: number,
    private readonly deps: WakeDeps<R>,
  ) {
    const tickMs = Math.min(TICK_MS, Math.max(50, Math.floor(leaseMs / 4)));
    setInterval(() => this.tick(), tickMs).unref();
  }

  /** null: nothing to wait for; else settled once the wake's check is answered and this run's stop, if any, is done. */
  wokenFirst(run: R): Promise<void> | null {
    this.tick();
    if (this.awayMs === 0) return run.stopped ? run.stopped.done : null;
    return new Promise<void>((r) => this.answered.push(r)).then(() => run.stopped?.done);
  }

  /**
   * One look at the clocks: a look that comes later than the lease says this launcher (and, with
   * it, its host) was away at least that long. Called every tick, and first thing wherever a
   * run's end is to be told (an exit, a backstop): after a freeze, node may hear a child's exit
   * before its late timers fire.
   */
  private tick(): void {
    const mono = performance.now();
    const boot = bootMs();
    const gap = Math.max(mono - this.lastMono, boot !== null && this.lastBoot > 0 ? boot - this.lastBoot : 0);
    this.lastMono = mono;
    if (boot !== null) this.lastBoot = boot;
    if (gap > this.leaseMs) {
      if (this.awayMs === 0) this.wokeAt = mono;
      this.awayMs = Math.max(this.awayMs, gap);
    }
    if (this.awayMs === 0) return;
    if (mono - this.wokeAt > WAKE_CHECK_FOR_MS) {
      // Never answered: the runs' ends are told as they are (their ends are written, tried again).
      this.settle();
    } else if (!this.checking) {
      void this.check();
    }
  }

  private settle(): void {
    this.awayMs = 0;
    const waiting = this.answered;
    this.answered = [];
    for (const r of waiting) r();
  }

  /** Ask the store whether the runs' workers were taken over while this launcher was away; stop those that were. */
  private async check(): Promise<void> {
    this.checking = true;
    const away = this.awayMs;
    try {
      // A run with no fence (none was handed) has no worker to ask after: left alone.
      const runs = this.deps.runs().filter((r) => !r.stopped && r.token !== '');
      if (runs.length) {
        const taken = await this.deps.takenOver(runs.map((r) => r.token), runs.map((r) => r.cloud));
        for (const i of taken) {
          const run = runs[i - 1];
          const why = `stopped by its launcher on ${this.deps.host} as the host woke: away ${secs(away)}, past its worker's lease (${secs(this.leaseMs)}), its worker taken over`;
          run.stopped = { why, done: this.deps.stop(run, why) };
        }
      }
      // Away again meanwhile: asked again at the next tick.
      if (this.awayMs === away) this.settle();
    } catch (err) {
      // The store cannot be reached (the host may be cut off too): asked again at the next tick.
      this.deps.failed(err);
    } finally {
      this.checking = false;
    }
  }
}
