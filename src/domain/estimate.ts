/**
 * Estimates of how long a strategy (or what is left of it) takes: the ETA of the live view and of
 * `strategy status`, and the plan of a dry run. Pure: durations in, milliseconds out.
 *
 * A state's duration is its mean, taken from the best source there is (SPEC §4 "Estimates"):
 * the operations seen so far in this strategy, else the statistics kept from earlier strategies
 * of the same type, else a fallback (the sim driver's latency midpoint), else unknown.
 *
 * The schedule model is the orchestrator's: stages run one after another; inside a stage a
 * sliding window of W slots, a subcloud holding its slot from its first state to its last. A
 * subcloud in flight frees its slot once what is left of its current state (its mean less the
 * time it has already run) and its later states are done; each subcloud not started takes the
 * earliest free slot for the sum of the means.
 */

/** Statistics of one state's durations (ok runs). */
export interface DurationStat {
  count: number;
  sumMs: number;
  sumSqMs: number;
  minMs: number;
  maxMs: number;
}

export type EstimateSource = 'observed' | 'history' | 'sim' | 'unknown';

/** Where an estimate came from, as `strategy status`, the dry run and the live view say it. */
export const ESTIMATE_SOURCE_LABEL: Record<EstimateSource, string | null> = {
  observed: 'this strategy',
  history: 'earlier strategies',
  sim: 'sim latency',
  unknown: null,
};

export function emptyStat(): DurationStat {
  return { count: 0, sumMs: 0, sumSqMs: 0, minMs: Infinity, maxMs: 0 };
}

export function addSample(stat: DurationStat, ms: number): void {
  const v = Math.max(0, ms);
  stat.count++;
  stat.sumMs += v;
  stat.sumSqMs += v * v;
  if (v < stat.minMs) stat.minMs = v;
  if (v > stat.maxMs) stat.maxMs = v;
}

export function meanMs(stat: DurationStat): number {
  return stat.count ? stat.sumMs / stat.count : 0;
}

export function stdDevMs(stat: DurationStat): number {
  if (stat.count < 2) return 0;
  const m = stat.sumMs / stat.count;
  return Math.sqrt(Math.max(0, stat.sumSqMs / stat.count - m * m));
}

/** Samples of many states, added one by one and read per state (one per flush, or per view). */
export class DurationTally {
  readonly byState = new Map<string, DurationStat>();

  add(state: string, ms: number): void {
    let s = this.byState.get(state);
    if (!s) this.byState.set(state, (s = emptyStat()));
    addSample(s, ms);
  }

  get size(): number {
    return this.byState.size;
  }
}

const RANK: Record<EstimateSource, number> = { observed: 0, history: 1, sim: 2, unknown: 3 };

/**
 * The mean of every state of the type, in state order, each from the best source that has it.
 * `source` is the weakest source used; `means` is null when some state has no source at all.
 */
export function stateMeans(
  states: readonly string[],
  sources: {
    observed?: ReadonlyMap<string, DurationStat>;
    history?: ReadonlyMap<string, DurationStat>;
    /** The same guess for every state (the sim driver's latency midpoint), when there is one. */
    fallbackMs?: number | null;
  },
): { means: number[] | null; source: EstimateSource; sds: number[] | null } {
  const means: number[] = [];
  const sds: number[] = [];
  let source: EstimateSource = 'observed';
  for (const state of states) {
    const seen = sources.observed?.get(state);
    const kept = sources.history?.get(state);
    let from: EstimateSource;
    if (seen && seen.count > 0) {
      means.push(meanMs(seen));
      sds.push(stdDevMs(seen));
      from = 'observed';
    } else if (kept && kept.count > 0) {
      means.push(meanMs(kept));
      sds.push(stdDevMs(kept));
      from = 'history';
    } else if (sources.fallbackMs !== undefined && sources.fallbackMs !== null && Number.isFinite(sources.fallbackMs)) {
      means.push(Math.max(0, sources.fallbackMs));
      sds.push(0);
      from = 'sim';
    } else {
      return { means: null, source: 'unknown', sds: null };
    }
    if (RANK[from] > RANK[source]) source = from;
  }
  return { means, source, sds };
}

/** What is left of one stage. */
export interface StageLeft {
  /** Its window (max parallel subclouds); at least 1 is assumed. */
  window: number;
  /** Subclouds not started (`initial`). */
  notStarted: number;
  /** Subclouds started and not ended: the state they are in, and how long it has run. */
  inFlight: readonly { stateIndex: number; elapsedMs: number }[];
  /**
   * The start rate in force, as the least time between two starts (domain/start-rate.ts); absent:
   * none. The Nth subcloud still to start starts no sooner than N spacings from now.
   */
  startSpacingMs?: number;
}

/** Milliseconds until a subcloud in `stateIndex`, running for `elapsedMs`, ends. */
function leftOf(means: readonly number[], stateIndex: number, elapsedMs: number): number {
  if (stateIndex < 0 || stateIndex >= means.length) return 0;
  let left = Math.max(0, means[stateIndex] - Math.max(0, elapsedMs));
  for (let i = stateIndex + 1; i < means.length; i++) left += means[i];
  return left;
}

/** A binary min-heap of slot free times: the earliest free slot takes the next subcloud. */
class MinHeap {
  private readonly a: number[] = [];
  get size(): number {
    return this.a.length;
  }
  push(v: number): void {
    const a = this.a;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p] <= a[i]) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  pop(): number {
    const a = this.a;
    const top = a[0];
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l] < a[m]) m = l;
        if (r < a.length && a[r] < a[m]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}

/**
 * The expected largest of k draws of a standard normal (Blom's approximation, Acklam's inverse
 * normal CDF): how far above the mean the slowest of the last subclouds of a stage lands.
 */
export function expectedMaxZ(k: number): number {
  if (k <= 1) return 0;
  const p = (k - 0.375) / (k + 0.25);
  // Acklam's rational approximation of the inverse normal CDF, upper region (p > 0.5).
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  if (p > 0.97575) {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/**
 * Milliseconds until one stage ends, from now. With `sds` (each state's standard deviation), the
 * end is pushed out by the expected excess of the slowest of the subclouds that finish the stage:
 * the mean schedule ends when an average subcloud would, but a stage waits for its slowest one.
 */
export function estimateStageMs(means: readonly number[], stage: StageLeft, sds?: readonly number[] | null): number {
  const window = Math.max(1, Math.floor(stage.window) || 1);
  const total = means.reduce((a, b) => a + b, 0);
  let end = 0;
  const lefts = stage.inFlight.map((f) => leftOf(means, f.stateIndex, f.elapsedMs));
  for (const left of lefts) if (left > end) end = left;
  if (stage.notStarted > 0) {
    if (total <= 0) return end;
    // Whole waves at once when every slot is free at the same time (the common case of a stage
    // not started): ceil(n / W) waves of the per-subcloud total, without a heap walk per subcloud.
    const spacing = stage.startSpacingMs ?? 0;
    if (stage.inFlight.length === 0 && spacing <= 0) end = Math.max(end, Math.ceil(stage.notStarted / window) * total);
    else {
      // The window's slots, each free after its subcloud's time left (built only here: the other
      // cases need no schedule).
      const heap = new MinHeap();
      for (const left of lefts) heap.push(left);
      // More in flight than the window (a window made smaller): no new start until below it.
      while (heap.size > window) heap.pop();
      while (heap.size < window) heap.push(0);
      for (let i = 0; i < stage.notStarted; i++) {
        // A slot free before the rate lets the next start waits for the rate.
        const done = Math.max(heap.pop(), i * spacing) + total;
        if (done > end) end = done;
        heap.push(done);
      }
    }
  }
  return end + tailMs(sds, Math.min(window, stage.notStarted + stage.inFlight.length), stage.notStarted > 0);
}

/**
 * The slowest of the last `k` subclouds: their whole run's spread if some are still to start,
 * else (all in flight) the spread of the last state only, as the earlier ones are behind them.
 */
function tailMs(sds: readonly number[] | null | undefined, k: number, starting: boolean): number {
  if (!sds || sds.length === 0 || k <= 1) return 0;
  const variance = starting ? sds.reduce((a, s) => a + s * s, 0) : sds[sds.length - 1] ** 2;
  return Math.sqrt(variance) * expectedMaxZ(k);
}

/** Milliseconds until every stage has ended: the stages run one after another. */
export function estimateRemainingMs(means: readonly number[], stages: readonly StageLeft[], sds?: readonly number[] | null): number {
  let ms = 0;
  for (const s of stages) ms += estimateStageMs(means, s, sds);
  return ms;
}

/** The midpoint of the sim driver's latency range, stored in the strategy's extra args. */
export function simLatencyMidpoint(extra: Record<string, unknown>): number | null {
  if (extra.driver !== undefined && extra.driver !== 'sim') return null;
  const min = Number(extra.sim_latency_min_ms);
  const max = Number(extra.sim_latency_max_ms);
  if (!Number.isFinite(min) || !Number.isFinite(max)) return null;
  return (min + max) / 2;
}

/** A span of time for people: `850ms`, `3.2s`, `42s`, `3m05s`, `1h02m`. */
export function formatSpan(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** The subclouds of a stage that share a maintenance window (a group), for the windowed estimate. */
export interface WindowedPart {
  count: number;
  /** The earliest time, at or after `atMs` (ms from now), its subclouds may start their first state. */
  opensAt: (atMs: number) => number;
}

/**
 * One stage not started, some of whose subclouds may have to wait for their group's maintenance
 * window: the orchestrator's model again, with the waits. At each free slot the subcloud that can
 * start soonest takes it (one whose window is closed gives its place to one that may start, in
 * step order among equals); a window closing on a subcloud in flight does not stop it. Returns
 * when the stage ends, in ms from `startMs` (itself ms from now).
 */
export function estimateWindowedStageMs(means: readonly number[], window: number, parts: readonly WindowedPart[], startMs: number): number {
  const w = Math.max(1, Math.floor(window) || 1);
  const total = means.reduce((a, b) => a + b, 0);
  const left = parts.map((p) => p.count);
  let n = left.reduce((a, b) => a + b, 0);
  const heap = new MinHeap();
  for (let i = 0; i < Math.min(w, n); i++) heap.push(startMs);
  let end = startMs;
  while (n > 0) {
    const free = heap.pop();
    let best = -1;
    let bestAt = Infinity;
    for (let k = 0; k < parts.length && bestAt > free; k++) {
      if (left[k] === 0) continue;
      const at = Math.max(free, parts[k].opensAt(free));
      if (at < bestAt) {
        best = k;
        bestAt = at;
      }
    }
    if (best < 0 || !Number.isFinite(bestAt)) return Infinity;
    left[best]--;
    n--;
    const done = bestAt + total;
    if (done > end) end = done;
    heap.push(done);
  }
  return end - startMs;
}
