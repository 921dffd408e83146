/**
 * The simulated sites and what each one saw. Every operation a site receives is written in its
 * ledger (site, state, attempt, fence, the host that sent it, start, end, outcome), and the
 * site-side invariants are checked as it happens: at most one operation per site at a time, a
 * (site, state) that ended `ok` never run again, and no stage with more sites busy than its window.
 * A site's run outlives the process that started it (as an exec run's status does): only the
 * simulated dcm process dies, never the site's work.
 *
 * `SimDriver` is one process's driver (drivers/driver.ts) onto these sites: answers reach the
 * process through its own timers, so a killed process never hears them and a frozen one hears
 * them once it is continued; a run left going is adopted by the next process through the ledger.
 */
import type { Adoption, Driver, LeftRun, OperationRequest, OperationResult, RemoteRun } from '../drivers/driver.js';
import type { ProcessTimers } from './clock.js';
import { faultOf } from '../store/faults.js';

export type SiteOutcome = 'ok' | 'failed' | 'defer' | 'killed';

export interface LedgerEntry {
  site: string;
  state: string;
  attempt: number;
  fence: string;
  host: string;
  stage: number;
  startMs: number;
  endMs: number | null;
  outcome: SiteOutcome | null;
  /** Resolves with the driver's answer once the run ends. */
  done: Promise<OperationResult>;
}

export interface Violation {
  kind: 'overlap' | 'ok-twice' | 'window' | 'not-ended' | 'step-reopened' | 'left-going' | 'lost-step';
  text: string;
}

/** How a site answers an operation: drawn by the schedule. */
export interface Plan {
  durationMs: number;
  outcome: 'ok' | 'failed' | 'defer';
}

export class Sites {
  readonly ledger: LedgerEntry[] = [];
  private readonly running = new Map<string, LedgerEntry[]>();
  private readonly okDone = new Set<string>();
  private readonly busyInStage = new Map<number, number>();
  readonly violations: Violation[] = [];
  /** The largest window each stage was ever given (a window shrunk by `update` lets runs in flight finish). */
  readonly windows = new Map<number, number>();

  constructor(
    private readonly plan: (site: string, state: string, attempt: number) => Plan,
    private readonly trace: (line: string) => void,
  ) {}

  /** An operation reaches a site. */
  begin(req: OperationRequest, host: string): LedgerEntry {
    const site = req.cloud;
    const p = this.plan(site, req.state, req.attempt);
    const now = Date.now();
    const others = this.running.get(site) ?? [];
    if (others.length) {
      const o = others[0];
      this.violation('overlap', `${site}: ${req.state} attempt ${req.attempt} from ${host} started while ${o.state} attempt ${o.attempt} from ${o.host} still ran`);
    }
    const stage = req.stage ?? 1;
    const busy = (this.busyInStage.get(stage) ?? 0) + 1;
    this.busyInStage.set(stage, busy);
    const window = this.windows.get(stage);
    if (window !== undefined && busy > window) this.violation('window', `stage ${stage}: ${busy} sites busy in a window of ${window}`);
    let finish!: (r: OperationResult) => void;
    const entry: LedgerEntry = {
      site,
      state: req.state,
      attempt: req.attempt,
      fence: req.fence ?? '',
      host,
      stage,
      startMs: now,
      endMs: null,
      outcome: null,
      done: new Promise<OperationResult>((r) => (finish = r)),
    };
    this.ledger.push(entry);
    this.running.set(site, [...others, entry]);
    this.trace(`${site} ${req.state}#${req.attempt} begins (${host})`);
    const timer = setTimeout(() => this.end(entry, p.outcome, finish), p.durationMs);
    (entry as LedgerEntry & { stop?: () => void }).stop = () => {
      clearTimeout(timer);
      this.end(entry, 'killed', finish);
    };
    return entry;
  }

  /** The sender asked the run to stop (a timeout, a second Ctrl-C): it ends now, killed. */
  stop(entry: LedgerEntry): void {
    if (entry.endMs === null) (entry as LedgerEntry & { stop?: () => void }).stop?.();
  }

  private end(entry: LedgerEntry, outcome: SiteOutcome, finish: (r: OperationResult) => void): void {
    if (entry.endMs !== null) return;
    entry.endMs = Date.now();
    entry.outcome = outcome;
    const left = (this.running.get(entry.site) ?? []).filter((e) => e !== entry);
    if (left.length) this.running.set(entry.site, left);
    else this.running.delete(entry.site);
    this.busyInStage.set(entry.stage, (this.busyInStage.get(entry.stage) ?? 1) - 1);
    const key = `${entry.site}\u0000${entry.state}`;
    if (outcome === 'ok') {
      if (this.okDone.has(key)) this.violation('ok-twice', `${entry.site}: ${entry.state} ended ok a second time (attempt ${entry.attempt}, ${entry.host})`);
      this.okDone.add(key);
    }
    this.trace(`${entry.site} ${entry.state}#${entry.attempt} ends ${outcome}`);
    finish(
      outcome === 'ok'
        ? { kind: 'next' }
        : outcome === 'defer'
          ? { kind: 'defer', reason: 'exit 75: the site did not answer' }
          : { kind: 'failed', reason: outcome === 'killed' ? 'killed' : 'exit 1: the state failed' },
    );
  }

  /**
   * `strategy retry` put the site's step back to its first state: a new entry into its states
   * (SPEC §1), whose states may end ok once more.
   */
  newEntry(site: string): void {
    for (const key of [...this.okDone]) if (key.startsWith(`${site}\u0000`)) this.okDone.delete(key);
  }

  /** The run `left` describes, as the site knows it (latest attempt first). */
  find(left: LeftRun): LedgerEntry | undefined {
    for (let i = this.ledger.length - 1; i >= 0; i--) {
      const e = this.ledger[i];
      if (e.site === left.cloud && e.state === left.state && e.attempt === left.attempt) return e;
    }
    return undefined;
  }

  /** Runs still going on any site. */
  stillRunning(): LedgerEntry[] {
    return [...this.running.values()].flat();
  }

  violation(kind: Violation['kind'], text: string): void {
    this.violations.push({ kind, text });
    this.trace(`VIOLATION ${kind}: ${text}`);
  }
}

/**
 * What a site's host tells the store of its runs (several hosts), as the exec driver's launcher
 * does: a run is claimed there before it begins (false: a worker on another host gave it up first),
 * and its end is written there as it ends, whatever became of the process that started it.
 */
export interface RunBook {
  claim(key: string, host: string): Promise<boolean>;
  ended(key: string, host: string, code: number | null, signal: string | null): Promise<void>;
}

/** `fn`, tried again every 200 ms (virtual) while the store is busy; any other error ends it. */
function untilFree<T>(fn: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const attempt = () => {
      fn().then(resolve, (err: unknown) => {
        if (faultOf(err) === 'busy') setTimeout(attempt, 200);
        else reject(err as Error);
      });
    };
    attempt();
  });
}

/** A run's key in the book: one per (site, state, attempt) of the one strategy a world applies. */
const keyOf = (r: { cloud: string; state: string; attempt: number }) => `${r.cloud}/${r.state}/${r.attempt}`;

/** One simulated process's driver. */
export class SimDriver implements Driver {
  readonly ownsTimeouts = false;
  adopted = 0;
  /** Several hosts: the book the runs' host writes; absent, runs of a gone worker elsewhere run again. */
  readonly remote?: (left: LeftRun, req: OperationRequest) => RemoteRun;

  constructor(
    private readonly sites: Sites,
    private readonly timers: ProcessTimers,
    private readonly host: string,
    private readonly book: RunBook | null = null,
  ) {
    if (book) this.remote = (left) => this.remoteRun(left);
  }

  run(req: OperationRequest): Promise<OperationResult> {
    // A dead process starts nothing; the registry's entry waits for ever, as nothing of it runs.
    if (this.timers.dead) return new Promise<OperationResult>(() => {});
    if (this.book) {
      const book = this.book;
      const key = keyOf(req);
      // Claimed first (tried again while the store is busy, as the launcher does); given up by a
      // worker on another host while this process could not launch it, it never begins.
      const begun = untilFree(() => book.claim(key, this.host)).then((mine) => {
        if (!mine) return { kind: 'failed', reason: 'not started: given up by a worker on another host' } satisfies OperationResult;
        const entry = this.begin(req);
        void entry.done.then(() => {
          const code = entry.outcome === 'ok' ? 0 : entry.outcome === 'defer' ? 75 : entry.outcome === 'failed' ? 1 : null;
          untilFree(() => book.ended(key, this.host, code, code === null ? 'SIGKILL' : null)).catch(() => {});
        });
        return entry.done;
      });
      return this.deliver(begun);
    }
    return this.deliver(this.begin(req).done);
  }

  private begin(req: OperationRequest): LedgerEntry {
    const entry = this.sites.begin(req, this.host);
    req.signal.addEventListener('abort', () => {
      if (!this.timers.dead && !this.timers.frozen) this.sites.stop(entry);
    });
    return entry;
  }

  adopt(left: LeftRun, req: OperationRequest): Adoption {
    const entry = this.sites.find(left);
    if (!entry) return { kind: 'interrupted' };
    this.adopted++;
    // An adopted run is stopped as a run of this process is (exec kills its process group).
    req.signal.addEventListener('abort', () => {
      if (!this.timers.dead && !this.timers.frozen) this.sites.stop(entry);
    });
    return { kind: 'wait', result: this.deliver(entry.done) };
  }

  /** A run of another host's: its end as the book has it; sites never hang, so its end always comes. */
  private remoteRun(left: LeftRun): RemoteRun {
    return {
      key: keyOf(left),
      maxLeftMs: 24 * 3_600_000,
      outcome: async (end) =>
        end.code === 0
          ? { kind: 'next' }
          : end.code === 75
            ? { kind: 'defer', reason: 'exit 75: the site did not answer' }
            : end.code === null
              ? { kind: 'retry', outcome: 'interrupted', reason: `the run was ended by ${end.signal ?? 'a signal'}`, delayMs: 0 }
              : { kind: 'failed', reason: 'exit 1: the state failed' },
    };
  }

  /** The answer reaches the process through its timers: never if killed, once continued if frozen. */
  private deliver(done: Promise<OperationResult>): Promise<OperationResult> {
    return new Promise<OperationResult>((resolve) => {
      void done.then((r) => this.timers.soon(() => resolve(r)));
    });
  }

  async close(): Promise<void> {}
}
