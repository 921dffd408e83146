/**
 * What every progress view shows, kept up to date from the orchestrator's events: steps per state
 * and per stage, the subclouds in flight and since when, the latest failures, the durations seen,
 * and from them an ETA (domain/estimate.ts). No output, no timers: the sinks read `snapshot()`.
 */
import { STEP_ENDED } from '../domain/types.js';
import {
  addSample,
  emptyStat,
  estimateRemainingMs,
  stateMeans,
  type DurationStat,
  type EstimateSource,
  type StageLeft,
} from '../domain/estimate.js';
import { etaOf, type Eta } from '../domain/status-hold.js';
import type { ApplyInfo, Fleet, TransitionEvent } from './progress.js';

/** What an estimate can start from before this run has seen durations of its own. */
export interface TrackerInputs {
  /** Statistics kept from earlier strategies of the same type. */
  history?: ReadonlyMap<string, DurationStat>;
  /** Durations of this strategy seen by an earlier process (a resume). */
  observed?: ReadonlyMap<string, DurationStat>;
  /** One guess for every state (the sim latency midpoint). */
  fallbackMs?: number | null;
  /**
   * The estimator `strategy status` and the report use (commands/eta.ts), read from the store: when
   * given, the views say what it says (known waits, what only the operator ends), counted down
   * between reads (issue 49: one estimator).
   */
  eta?: (nowMs: number) => Promise<{ eta: Eta | null; source: EstimateSource }>;
}

export interface Snapshot {
  type: string;
  /** `applying`, `paused`, or `aborting` once the steps not started were aborted. */
  state: string;
  stage: number | null;
  stages: number;
  window: number | null;
  /** The running stage's start rate in force (starts a minute), or null for none. */
  startRate: number | null;
  total: number;
  /** Steps ended (complete, failed, aborted), whenever they ended. */
  ended: number;
  counts: { initial: number; inProgress: number; complete: number; failed: number; deferred: number; aborted: number };
  /** Steps in progress by the state they are in, in the type's order. */
  byState: [string, number][];
  inFlight: number;
  /** Live workers on the strategy, this one included (1: this one alone). */
  workers: number;
  /** Steps in flight with the other workers. */
  inFlightElsewhere: number;
  /** Steps ended per second by this run. */
  rate: number;
  /** Since the strategy's first step started (not reset by a resume). */
  elapsedMs: number;
  etaMs: number | null;
  etaSource: EstimateSource;
  /**
   * The estimate as `strategy status` makes it (domain/status-hold.ts Eta, said by etaWords), and
   * how long ago it was made (the views count down); null: unknown.
   */
  etaOf: { eta: Eta; elapsedMs: number } | null;
  /** The latest failures, newest last. */
  failures: { cloud: string; details: string }[];
  /** The latest progress lines of subclouds in flight (their runs' own word), newest last. */
  progress: { cloud: string; details: string }[];
  /** Groups whose subclouds wait for their maintenance window: `night Sat 22:00-Sun 06:00 (UTC) opens <ISO>`. */
  windowWaits: string[];
}

interface Live {
  stage: number;
  state: string;
  /** When its current operation started; null between operations. */
  startedMs: number | null;
}

const LATEST_FAILURES = 5;
const LATEST_PROGRESS = 5;
/** The estimate walks the window's slots: worth recomputing a few times a second, not per redraw. */
const ETA_EVERY_MS = 500;
/** How often the store's estimate is read again (a few queries): the views count down between reads. */
const STORE_ETA_EVERY_MS = 2_000;

export class ProgressTracker {
  private info: ApplyInfo | null = null;
  private readonly stageCounts = new Map<number, Map<string, number>>();
  private readonly windows = new Map<number, number>();
  private readonly startRates = new Map<number, number>();
  private readonly live = new Map<string, Live>();
  private readonly seen = new Map<string, DurationStat>();
  private readonly failures: { cloud: string; details: string }[] = [];
  /** Each subcloud in flight whose run reported progress, in the order they last did. */
  private readonly progress = new Map<string, string>();
  private stage: number | null = null;
  private endedThisRun = 0;
  private aborting = false;
  private isPaused = false;
  private readonly windowWaits = new Map<string, string>();
  private eta: { at: number; ms: number | null; source: EstimateSource } | null = null;
  private workers = 1;
  private inFlightElsewhere = 0;
  /** The store's estimate (inputs.eta), when it was read, and whether a read is out. */
  private storeEta: { at: number; eta: Eta | null; source: EstimateSource } | null = null;
  private storeEtaAsked = false;

  constructor(private readonly inputs: TrackerInputs = {}) {
    for (const [state, s] of inputs.observed ?? []) this.seen.set(state, { ...s });
  }

  begin(info: ApplyInfo): void {
    this.info = info;
    for (const st of info.stages) {
      this.stageCounts.set(st.stage, new Map(Object.entries(st.counts)));
      this.windows.set(st.stage, st.window);
    }
  }

  stageStarted(stage: number, window: number): void {
    this.stage = stage;
    this.windows.set(stage, window);
  }

  paused(on: boolean): void {
    this.isPaused = on;
    this.forget();
  }

  /** What the estimate was made from changed: made again (the store's too, asked for at once). */
  private forget(): void {
    this.eta = null;
    this.storeEta = null;
  }

  windowWait(group: string, text: string | null): void {
    if (text === null) this.windowWaits.delete(group);
    else this.windowWaits.set(group, text);
  }

  windowChanged(stage: number, window: number): void {
    this.windows.set(stage, window);
    this.forget();
  }

  /** The start rate in force of a stage (null: none): shown, and in the estimate. */
  rateChanged(stage: number, perMin: number | null): void {
    if (perMin === null) this.startRates.delete(stage);
    else this.startRates.set(stage, perMin);
    this.eta = null;
  }

  initialAborted(): void {
    this.aborting = true;
    // The subclouds that waited for a window are aborted with the rest: none waits any more.
    this.windowWaits.clear();
    for (const counts of this.stageCounts.values()) {
      const n = counts.get('initial') ?? 0;
      counts.set('initial', 0);
      counts.set('aborted', (counts.get('aborted') ?? 0) + n);
    }
    this.forget();
  }

  transition(e: TransitionEvent, nowMs: number): void {
    const stage = e.stage ?? this.stage ?? 0;
    if (e.from !== e.to) {
      let counts = this.stageCounts.get(stage);
      if (!counts) this.stageCounts.set(stage, (counts = new Map()));
      counts.set(e.from, (counts.get(e.from) ?? 0) - 1);
      counts.set(e.to, (counts.get(e.to) ?? 0) + 1);
      // An operation that ended well: its duration feeds the estimate.
      if (e.durationMs !== undefined && e.to !== 'failed' && e.to !== 'aborted') {
        let s = this.seen.get(e.from);
        if (!s) this.seen.set(e.from, (s = emptyStat()));
        addSample(s, e.durationMs);
      }
    }
    // Paused, the estimate moves with events only (not with the clock): each one recomputes it.
    if (this.isPaused) this.eta = null;
    const ended = e.ended ?? STEP_ENDED.includes(e.to);
    // A transition sets the step's details: a progress line of the run before is no more.
    this.progress.delete(e.cloud);
    if (ended) {
      this.live.delete(e.cloud);
      this.endedThisRun++;
      if (e.to === 'failed') {
        this.failures.push({ cloud: e.cloud, details: e.details });
        if (this.failures.length > LATEST_FAILURES) this.failures.shift();
      }
    } else {
      this.live.set(e.cloud, { stage, state: e.to, startedMs: e.attempt !== undefined ? nowMs : null });
    }
  }

  /**
   * One of several workers: the store's counts replace those kept from this worker's own
   * transitions (which miss the others'); this worker's next transitions move them on from there.
   */
  fleet(f: Fleet): void {
    this.workers = f.workers;
    this.inFlightElsewhere = f.inFlightElsewhere;
    for (const counts of this.stageCounts.values()) counts.clear();
    for (const r of f.counts) {
      let counts = this.stageCounts.get(r.stage);
      if (!counts) this.stageCounts.set(r.stage, (counts = new Map()));
      counts.set(r.state, r.n);
    }
    this.eta = null;
  }

  /** A run in flight reported progress: its subcloud's details. */
  details(cloud: string, text: string): void {
    if (!this.live.has(cloud)) return;
    this.progress.delete(cloud);
    this.progress.set(cloud, text);
  }

  snapshot(nowMs: number): Snapshot {
    const info = this.info;
    const states = info?.states ?? [];
    const counts = { initial: 0, inProgress: 0, complete: 0, failed: 0, deferred: 0, aborted: 0 };
    const inState = new Map<string, number>();
    for (const c of this.stageCounts.values()) {
      for (const [state, n] of c) {
        if (state === 'initial' || state === 'complete' || state === 'failed' || state === 'deferred' || state === 'aborted') counts[state] += n;
        else {
          counts.inProgress += n;
          inState.set(state, (inState.get(state) ?? 0) + n);
        }
      }
    }
    const byState: [string, number][] = states.filter((s) => inState.get(s)).map((s) => [s, inState.get(s)!]);
    for (const [s, n] of inState) if (n && !states.includes(s)) byState.push([s, n]);
    let inFlight = 0;
    for (const l of this.live.values()) if (l.startedMs !== null) inFlight++;
    const runMs = info ? Math.max(0, nowMs - info.startedMs) : 0;
    const elapsedMs = info ? Math.max(0, nowMs - Math.min(info.startedMs, info.firstStartedMs ?? info.startedMs)) : 0;
    const total = counts.initial + counts.inProgress + counts.complete + counts.failed + counts.deferred + counts.aborted;
    const eta = this.estimate(nowMs, counts.initial + counts.inProgress + counts.deferred === 0);
    const fromStore = this.storeEta;
    return {
      type: info?.type ?? '',
      state: this.aborting ? 'aborting' : this.isPaused ? 'paused' : 'applying',
      stage: this.stage,
      stages: this.stageCounts.size,
      window: this.stage === null ? null : (this.windows.get(this.stage) ?? null),
      startRate: this.stage === null ? null : (this.startRates.get(this.stage) ?? null),
      total,
      ended: counts.complete + counts.failed + counts.aborted,
      counts,
      byState,
      inFlight,
      workers: this.workers,
      inFlightElsewhere: this.inFlightElsewhere,
      rate: runMs > 0 ? (this.endedThisRun * 1000) / runMs : 0,
      elapsedMs,
      etaMs: eta.ms,
      etaSource: fromStore ? fromStore.source : eta.source,
      etaOf: fromStore
        ? fromStore.eta === null ? null : { eta: fromStore.eta, elapsedMs: nowMs - fromStore.at }
        : eta.ms === null ? null : { eta: etaOf(eta.ms, null, this.isPaused, null), elapsedMs: 0 },
      failures: [...this.failures],
      progress: [...this.progress].slice(-LATEST_PROGRESS).map(([cloud, details]) => ({ cloud, details })),
      windowWaits: [...this.windowWaits.values()],
    };
  }

  /** The store's estimate read again when it is older than STORE_ETA_EVERY_MS (one read out at a time). */
  private readStoreEta(nowMs: number): void {
    const read = this.inputs.eta;
    if (!read || this.storeEtaAsked || (this.storeEta && nowMs - this.storeEta.at < STORE_ETA_EVERY_MS)) return;
    this.storeEtaAsked = true;
    read(nowMs).then(
      (r) => (this.storeEta = { at: nowMs, ...r }),
      () => {}, // A busy store: the estimate kept is counted down, and asked for again.
    ).finally(() => (this.storeEtaAsked = false));
  }

  /** The time left, from the means of the durations seen (or kept, or guessed). */
  private estimate(nowMs: number, nothingLeft: boolean): { ms: number | null; source: EstimateSource } {
    this.readStoreEta(nowMs);
    if (nothingLeft) return { ms: 0, source: 'observed' };
    if (this.eta && nowMs - this.eta.at < ETA_EVERY_MS) {
      // Between recomputations the estimate counts down with the clock, but not while paused:
      // nothing new starts then, so the clock brings the end no nearer (the views say "once resumed").
      if (this.isPaused) return { ms: this.eta.ms, source: this.eta.source };
      return { ms: this.eta.ms === null ? null : Math.max(0, this.eta.ms - (nowMs - this.eta.at)), source: this.eta.source };
    }
    const states = this.info?.states ?? [];
    const { means, source, sds } = stateMeans(states, {
      observed: this.seen,
      history: this.inputs.history,
      fallbackMs: this.inputs.fallbackMs,
    });
    let ms: number | null = null;
    if (means) {
      const left: StageLeft[] = [];
      const flying = new Map<number, { stateIndex: number; elapsedMs: number }[]>();
      for (const l of this.live.values()) {
        let list = flying.get(l.stage);
        if (!list) flying.set(l.stage, (list = []));
        list.push({ stateIndex: states.indexOf(l.state), elapsedMs: l.startedMs === null ? 0 : nowMs - l.startedMs });
      }
      for (const stage of [...this.stageCounts.keys()].sort((a, b) => a - b)) {
        const notStarted = this.aborting ? 0 : Math.max(0, this.stageCounts.get(stage)!.get('initial') ?? 0);
        const inFlight = flying.get(stage) ?? [];
        if (notStarted === 0 && inFlight.length === 0) continue;
        const perMin = this.startRates.get(stage);
        left.push({ window: this.windows.get(stage) ?? 1, notStarted, inFlight, startSpacingMs: perMin ? 60_000 / perMin : undefined });
      }
      ms = estimateRemainingMs(means, left, sds);
    }
    this.eta = { at: nowMs, ms, source };
    return { ms, source };
  }
}
