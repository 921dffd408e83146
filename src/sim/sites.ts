/**
 * The simulated sites and what each one saw. Every operation a site receives is written in its
 * ledger (site, state, attempt, fence, the host that sent it, start, end, outcome), and what a site
 * can judge by itself is judged as it happens: at most one operation on it at a time, a (site,
 * state) that ended `ok` never run again within one entry into its states, and no stage with more
 * sites busy than the window in force (judge.ts says what is in force when).
 *
 * A site's work goes on at the site whatever becomes of the host that asked for it: a frozen or cut
 * off host's runs still end there; only a stop that reaches the site (the run's processes killed
 * while their host runs, or their host lost) ends one early, `killed`.
 *
 * How a site answers (its plan) is drawn from (schedule seed, site, state, attempt) alone, never
 * from the order operations reach the sites: a schedule shrunk by one fault keeps every other draw.
 */
import type { OperationRequest } from '../drivers/driver.js';
import type { Loop } from './loop.js';
import { keyedPrng } from './prng.js';

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
  /** The entry into the site's states it belongs to (a retry makes a new one). */
  entry: number;
  /** The world's epoch at its start (each `strategy retry` begins one): stages are in order within one. */
  epoch: number;
  /** Called when it ends (its host's launcher hears it). */
  readonly ended: ((e: LedgerEntry) => void)[];
  /**
   * Fenced sites (on_lost_host: rerun): a run begun with a newer claim of its step superseded this
   * one (stopped, if it still ran); its end, if it reached the history at all, is not the step's.
   */
  superseded?: boolean;
  /** Fenced sites: the state had ended ok under an older claim; the site answered that at once, doing nothing. */
  idempotent?: boolean;
}

export type ViolationKind =
  | 'overlap'
  | 'own-writes'
  | 'ok-twice'
  | 'window'
  | 'not-ended'
  | 'step-reopened'
  | 'ended-step-changed'
  | 'left-going'
  | 'lost-step'
  | 'states-not-run'
  | 'history-ledger'
  | 'stage-order'
  | 'told'
  | 'liveness'
  | 'rate';

export interface Violation {
  kind: ViolationKind;
  text: string;
}

/** How a site answers an operation: drawn from the schedule's seed and the run's key. */
export interface Plan {
  durationMs: number;
  /** `hang`: the site accepts the operation and never answers until it is stopped. */
  outcome: 'ok' | 'failed' | 'defer' | 'hang';
  /**
   * The run's work is a process of its host (it pauses when its host is paused, and goes on when it
   * continues), rather than work at the site reached over ssh, which goes on whatever its host does.
   */
  local: boolean;
}

export interface PlanOdds {
  seed: number;
  stateTimeoutMs: number | null;
  pFail: number;
  pDefer: number;
  pHang: number;
}

/** The plan of (site, state, attempt): the same whatever else the schedule holds. */
export function planOf(o: PlanOdds, site: string, state: string, attempt: number): Plan {
  const r = keyedPrng(o.seed, site, state, attempt);
  const long = r.chance(0.01) && o.stateTimeoutMs !== null;
  const durationMs = long ? o.stateTimeoutMs! + r.int(1_000, 60_000) : r.int(1_000, 30_000);
  const x = r.next();
  const outcome = x < o.pFail ? 'failed' : x < o.pFail + o.pDefer ? 'defer' : x < o.pFail + o.pDefer + o.pHang ? 'hang' : 'ok';
  return { durationMs, outcome, local: r.chance(0.5) };
}

/** The claim count of a step in its run's DCM_FENCE (`<worker token>.<claims>`): newer claims are larger. */
function claimOf(fence: string): number {
  const n = Number(fence.slice(fence.lastIndexOf('.') + 1));
  return Number.isFinite(n) ? n : -1;
}

export class Sites {
  readonly ledger: LedgerEntry[] = [];
  private readonly running = new Map<string, LedgerEntry[]>();
  /** (site, state) ended ok in the site's current entry. */
  private readonly okDone = new Set<string>();
  private readonly entries = new Map<string, number>();
  /**
   * The sites of each stage in flight, as the sites see it: from a start while not in flight (a
   * first state, or the state a deferred or interrupted step goes on from) to their last state's
   * ok, or a run that did not end ok. What the window counts: a smaller window lets the sites in
   * flight go on through their states, and starts no new one until fewer are in flight (SPEC §4).
   */
  private readonly inFlight = new Map<number, Set<string>>();
  /**
   * A site whose run failed or was cut off, by the state it was in: a run of the same state next is
   * that state tried again, in the slot it kept (a retry's backoff, a run interrupted and run
   * again), not a new start. A deferral gives its slot back: its next try is a new start.
   */
  private readonly suspended = new Map<string, string>();
  readonly violations: Violation[] = [];
  /** Each running entry's end, as set on the clock: when it is due, how to cancel it, whether it pauses with its host. */
  private readonly timers = new Map<LedgerEntry, { dueMs: number; cancel(): void; local: boolean; outcome: SiteOutcome; leftMs?: number }>();

  constructor(
    private readonly loop: Loop,
    private readonly plan: (site: string, state: string, attempt: number) => Plan,
    /** The window in force for `stage` at a start now (judge.ts). */
    private readonly windowAt: (stage: number) => number | undefined,
    private readonly trace: (line: string) => void,
    private readonly epoch: () => number,
    /** The type's last state: its ok ends a site's flight. */
    private readonly lastState: string,
    /**
     * The sites check DCM_FENCE (what `on_lost_host: rerun` requires of them): a run begun with a
     * newer claim of its step stops any run of an older one still going there first.
     */
    private readonly fenced = false,
  ) {}

  /** An operation reaches a site. */
  begin(req: OperationRequest, host: string): LedgerEntry {
    const site = req.cloud;
    const p = this.plan(site, req.state, req.attempt);
    const done = this.fenced ? this.supersede(site, req) : false;
    const others = this.running.get(site) ?? [];
    if (others.length) {
      const o = others[0];
      this.violation('overlap', `${site}: ${req.state} attempt ${req.attempt} from ${host} started while ${o.state} attempt ${o.attempt} from ${o.host} still ran`);
    }
    const stage = req.stage ?? 1;
    let flying = this.inFlight.get(stage);
    if (!flying) this.inFlight.set(stage, (flying = new Set()));
    const again = this.suspended.get(site) === req.state;
    this.suspended.delete(site);
    if (!flying.has(site) && again) flying.add(site);
    if (!flying.has(site)) {
      const window = this.windowAt(stage);
      if (window !== undefined && flying.size + 1 > window) this.violation('window', `stage ${stage}: ${site} started with ${flying.size} in flight in a window of ${window}`);
      flying.add(site);
    }
    const entry: LedgerEntry = {
      site,
      state: req.state,
      attempt: req.attempt,
      fence: req.fence ?? '',
      host,
      stage,
      startMs: this.loop.now,
      endMs: null,
      outcome: null,
      entry: this.entries.get(site) ?? 0,
      epoch: this.epoch(),
      ended: [],
    };
    this.ledger.push(entry);
    this.running.set(site, [...others, entry]);
    this.trace(`${site} ${req.state}#${req.attempt} begins (${host})`);
    if (done) {
      // The site checks the fence and finds the state done under an older claim: ok, at once.
      entry.idempotent = true;
      this.arm(entry, 0, 'ok', false);
    } else if (p.outcome !== 'hang') this.arm(entry, p.durationMs, p.outcome as SiteOutcome, p.local);
    return entry;
  }

  private arm(entry: LedgerEntry, ms: number, outcome: SiteOutcome, local: boolean): void {
    const e = this.loop.after(ms, () => this.end(entry, outcome));
    this.timers.set(entry, { dueMs: this.loop.now + ms, cancel: () => this.loop.cancel(e), local, outcome });
  }

  /** A host paused (or continued): the runs whose work is its processes stop where they are (or go on). */
  hostPaused(host: string, paused: boolean): void {
    for (const [entry, t] of this.timers) {
      if (entry.host !== host || !t.local) continue;
      if (paused && t.leftMs === undefined) {
        t.cancel();
        t.leftMs = Math.max(0, t.dueMs - this.loop.now);
      } else if (!paused && t.leftMs !== undefined) {
        this.arm(entry, t.leftMs, t.outcome, true);
      }
    }
  }

  /**
   * A fenced site sees a newer claim of its step: the runs of older claims still going are stopped
   * (refused from now on), and those of the same state are superseded. True: that state had ended ok
   * under an older claim in this entry, and the new run has nothing to do.
   */
  private supersede(site: string, req: OperationRequest): boolean {
    const claim = claimOf(req.fence ?? '');
    let done = false;
    for (const o of this.ledger) {
      if (o.site !== site || claimOf(o.fence) >= claim || o.superseded) continue;
      if (o.endMs === null) {
        this.trace(`${o.site} refuses ${o.state}#${o.attempt} of an older fence (${o.fence})`);
        this.stop(o);
      }
      if (o.state === req.state) {
        o.superseded = true;
        if (o.outcome === 'ok' && o.entry === (this.entries.get(site) ?? 0)) done = true;
      }
    }
    return done;
  }

  /** The run was stopped (a timeout, a second Ctrl-C, an abort now, its host lost): it ends now, killed. */
  stop(entry: LedgerEntry): void {
    if (entry.endMs !== null) return;
    this.timers.get(entry)?.cancel();
    this.end(entry, 'killed');
  }

  private end(entry: LedgerEntry, outcome: SiteOutcome): void {
    if (entry.endMs !== null) return;
    this.timers.delete(entry);
    entry.endMs = this.loop.now;
    entry.outcome = outcome;
    const left = (this.running.get(entry.site) ?? []).filter((e) => e !== entry);
    if (left.length) this.running.set(entry.site, left);
    else this.running.delete(entry.site);
    if (outcome !== 'ok' || entry.state === this.lastState) this.inFlight.get(entry.stage)?.delete(entry.site);
    if (outcome === 'failed' || outcome === 'killed') this.suspended.set(entry.site, entry.state);
    const key = `${entry.site}\u0000${entry.state}`;
    if (outcome === 'ok' && !entry.idempotent) {
      if (this.okDone.has(key) && entry.entry === (this.entries.get(entry.site) ?? 0)) {
        this.violation('ok-twice', `${entry.site}: ${entry.state} ended ok a second time (attempt ${entry.attempt}, ${entry.host})`);
      }
      this.okDone.add(key);
    }
    this.trace(`${entry.site} ${entry.state}#${entry.attempt} ends ${outcome}`);
    for (const f of entry.ended.splice(0)) f(entry);
  }

  /**
   * `strategy retry` put the site's step back to its first state: a new entry into its states
   * (SPEC §1), whose states may end ok once more.
   */
  newEntry(site: string, firstAttempt = 1): void {
    this.entries.set(site, (this.entries.get(site) ?? 0) + 1);
    this.firstAttempts.set(`${site}\u0000${this.entryOf(site)}`, firstAttempt);
    this.suspended.delete(site);
    for (const key of [...this.okDone]) if (key.startsWith(`${site}\u0000`)) this.okDone.delete(key);
    // Its last entry's hold on a slot is over: its step had ended (retry refuses while a run goes),
    // maybe between two of its states, by an abort the judge saw no commit of.
    for (const flying of this.inFlight.values()) flying.delete(site);
  }

  entryOf(site: string): number {
    return this.entries.get(site) ?? 0;
  }

  /** The attempt of its first state that opens entry `entry` of `site` (1 for the first entry; after a retry, the one after the history's last). */
  firstAttemptOf(site: string, entry: number): number {
    return this.firstAttempts.get(`${site}\u0000${entry}`) ?? 1;
  }

  private readonly firstAttempts = new Map<string, number>();

  /** The run of (site, state, attempt), as the site knows it (latest first). */
  find(r: { cloud: string; state: string; attempt: number }): LedgerEntry | undefined {
    for (let i = this.ledger.length - 1; i >= 0; i--) {
      const e = this.ledger[i];
      if (e.site === r.cloud && e.state === r.state && e.attempt === r.attempt) return e;
    }
    return undefined;
  }

  /** Runs still going on any site. */
  stillRunning(): LedgerEntry[] {
    return [...this.running.values()].flat();
  }

  violation(kind: ViolationKind, text: string): void {
    this.violations.push({ kind, text });
    this.trace(`VIOLATION ${kind}: ${text}`);
  }
}
