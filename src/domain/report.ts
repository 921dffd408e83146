/**
 * What `dcm strategy report` shows, computed from the steps and their history: a summary, a
 * timeline per stage (a lane per subcloud, or lanes of several subclouds when a stage has too many
 * to draw one by one), the failures, and the distribution of durations per state; and, for a
 * post-mortem, what was rolled out, every run that failed (recovered or not, report-runs.ts), each
 * site's attempts and each stage's window over time (report-windows.ts). Pure: rows and the time
 * of the report in, a model out; the HTML is drawn from it by src/cli/output/report-html.ts.
 */
import { STEP_DEFERRED } from './types.js';
import { STEP_ABORTED, STEP_COMPLETE, STEP_FAILED, STEP_INITIAL } from './types.js';
import { failedRuns, siteAttempts, type FailedRun, type SiteAttempts } from './report-runs.js';
import { maxParallelHistory, stageWindowSpans, type WindowSpan } from './report-windows.js';

export interface ReportStep {
  id: number;
  cloud: string;
  stage: number;
  state: string;
  details: string;
  attempt: number;
}

/** One state-operation run; times in epoch microseconds (finished null while it runs). */
export interface ReportRun {
  stepId: number;
  state: string;
  attempt: number;
  startUs: number;
  finishUs: number | null;
  outcome: string;
  details: string;
}

/** One row of the strategy's event record (pause, update, apply start and end, …); time in epoch µs. */
export interface ReportEvent {
  atUs: number;
  event: string;
  user: string;
  host: string;
  pid: number;
  details: string;
  /** The operator's `--reason`, null when none was given. */
  reason?: string | null;
}

/** An event placed on the timeline: the stage whose drawing shows it (null: no stage has run yet). */
export interface PlacedEvent extends ReportEvent {
  stage: number | null;
}

export interface ReportInput {
  strategy: {
    type: string;
    state: string;
    createdAt: string;
    updatedAt: string | null;
    stopOnFailure: boolean;
    subcloudApplyType: string | null;
    maxParallelSubclouds: number | null;
    driver: string;
    maxFailures?: string | null;
    /** Each stage's gate, budget and the gate's outcome, as `strategy status` says them (none: all defaults). */
    stageGates?: string[];
    /** The type options as stored, each by its flag (domain/options.ts shownTypeOptions). */
    typeOptions?: readonly [string, string][];
    /** How the subclouds were chosen at create (cloud names, group, labels, force), each by its flag. */
    targets?: readonly [string, string][];
    /** The exec config's sha256: of the file as read at create, or (a strategy made before dcm kept that) of the config as stored. */
    execConfig?: { sha256: string; of: 'file' | 'stored config' } | null;
    /** The create's other options by flag; what the audits after each site found, when it audits. */
    createOptions?: readonly [string, string][];
    auditFindings?: readonly import('./report-audit.js').AuditFinding[];
    /** The time left as `strategy status` says it (one estimator, issue 49); none once it has ended. */ eta?: string | null;
  };
  /** The type's states, in order: the colours and the rows of the duration table follow it. */
  states: readonly string[];
  stages: readonly { stage: number; window: number; group: string | null }[];
  /** In step order (stage, then id). */
  steps: readonly ReportStep[];
  /** In the order they started. */
  runs: readonly ReportRun[];
  /** The event record, in the order it was written. */
  events?: readonly ReportEvent[];
  /** When the report is made: where a running operation's bar ends. */
  nowUs: number;
  /** Subclouds per stage above which lanes hold several subclouds. */
  maxLanesPerStage?: number;
  /** Lanes of all stages together (stages share it in proportion to their size). */
  maxTotalLanes?: number;
}

/** A stretch of one lane: one run (single lanes) or the dominant state of a time slice (groups). */
export interface Segment {
  startUs: number;
  endUs: number;
  state: string;
  /** ok | failed | timeout | interrupted | running | skipped; for a group's slice, `mixed`. */
  outcome: string;
  /** For a group's slice: how busy the lane's subclouds were in it, 0..1. */
  share?: number;
  title: string;
}

export interface Lane {
  label: string;
  /** Subclouds in the lane (1 for a lane per subcloud). */
  count: number;
  /** The step state of a single subcloud; for a group, the worst one (failed, then aborted…). */
  finalState: string;
  failed: number;
  segments: Segment[];
  /** Moments a run failed (or timed out) in this lane. */
  failuresAt: number[];
}

export interface StageTimeline {
  stage: number;
  group: string | null;
  window: number;
  steps: number;
  startUs: number | null;
  endUs: number | null;
  /** Subclouds per lane: 1 unless the stage has more steps than lanes to draw. */
  perLane: number;
  lanes: Lane[];
  counts: Record<string, number>;
  /** The window in force over the stage's span (empty until it runs): as it ran, not as rewritten since. */
  windows: WindowSpan[];
}

export interface Failure {
  cloud: string;
  stage: number;
  state: string;
  details: string;
  attempt: number;
  atUs: number | null;
}

export interface DurationRow {
  state: string;
  count: number;
  failed: number;
  minMs: number;
  p50Ms: number;
  p90Ms: number;
  maxMs: number;
  meanMs: number;
  /** Counts of the ok runs in `bins` equal slices of [minMs, maxMs]. */
  histogram: number[];
}

export interface ReportModel {
  strategy: ReportInput['strategy'];
  steps: number;
  counts: Record<string, number>;
  startUs: number | null;
  endUs: number | null;
  stages: StageTimeline[];
  failures: Failure[];
  durations: DurationRow[];
  slowest: { cloud: string; stage: number; ms: number; state: string }[];
  states: string[];
  events: PlacedEvent[];
  /** Every run that did not end ok, recovered or not, in the order they started. */
  failedRuns: FailedRun[];
  /** Each site's runs per state, in step order. */
  attempts: SiteAttempts[];
  /** The strategy's max parallel subclouds at create, and each change `strategy update` made. */
  maxParallel: ReturnType<typeof maxParallelHistory>;
}

export const DEFAULT_MAX_LANES = 500;
/** Lanes drawn in all stages together: many stages of a few hundred share this budget. */
export const MAX_TOTAL_LANES = 2000;
const HISTOGRAM_BINS = 24;
/** Time slices of a lane of several subclouds. */
const SLICES = 240;

/** The bucket a step's final state falls in for counts: initial, in progress, or how it ended. */
export function stepBucket(state: string): string {
  if (state === STEP_INITIAL || state === STEP_COMPLETE || state === STEP_FAILED || state === STEP_ABORTED) return state;
  // Waiting to be tried again (its site did not answer): counted apart from failed and from in flight.
  if (state === STEP_DEFERRED) return state;
  return 'in progress';
}

const WORST = [STEP_FAILED, STEP_ABORTED, STEP_DEFERRED, 'in progress', STEP_INITIAL, STEP_COMPLETE];

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function runEnd(r: ReportRun, nowUs: number): number {
  return r.finishUs ?? Math.max(r.startUs, nowUs);
}

/** The lanes of a stage with one subcloud each: a segment per run. */
function singleLanes(steps: readonly ReportStep[], runsOf: Map<number, ReportRun[]>, nowUs: number): Lane[] {
  return steps.map((s) => {
    const runs = runsOf.get(s.id) ?? [];
    return {
      label: s.cloud,
      count: 1,
      finalState: s.state,
      failed: s.state === STEP_FAILED ? 1 : 0,
      segments: runs.map((r) => ({
        startUs: r.startUs,
        endUs: runEnd(r, nowUs),
        state: r.state,
        outcome: r.outcome,
        title: `${s.cloud}: ${r.state} (attempt ${r.attempt}) ${r.outcome}${r.details ? `: ${r.details}` : ''}`,
      })),
      failuresAt: runs.filter((r) => r.outcome === 'failed' || r.outcome === 'timeout').map((r) => runEnd(r, nowUs)),
    };
  });
}

/**
 * Lanes of `per` subclouds each: the stage's span cut in slices; a slice shows the state that
 * took most of the lane's time in it, and how busy the lane was.
 */
function groupedLanes(
  steps: readonly ReportStep[],
  runsOf: Map<number, ReportRun[]>,
  per: number,
  startUs: number,
  endUs: number,
  nowUs: number,
): Lane[] {
  const lanes: Lane[] = [];
  const span = Math.max(1, endUs - startUs);
  const sliceUs = span / SLICES;
  for (let from = 0; from < steps.length; from += per) {
    const members = steps.slice(from, from + per);
    const busy = new Map<string, Float64Array>();
    const failuresAt: number[] = [];
    const failedIn = new Map<number, number>();
    for (const s of members) {
      for (const r of runsOf.get(s.id) ?? []) {
        const a = r.startUs;
        const b = runEnd(r, nowUs);
        if (r.outcome === 'failed' || r.outcome === 'timeout') {
          failuresAt.push(b);
          const k = Math.min(SLICES - 1, Math.floor((b - startUs) / sliceUs));
          failedIn.set(k, (failedIn.get(k) ?? 0) + 1);
        }
        let acc = busy.get(r.state);
        if (!acc) busy.set(r.state, (acc = new Float64Array(SLICES)));
        const first = Math.max(0, Math.floor((a - startUs) / sliceUs));
        const last = Math.min(SLICES - 1, Math.floor((b - startUs) / sliceUs));
        for (let k = first; k <= last; k++) {
          const lo = startUs + k * sliceUs;
          const overlap = Math.min(b, lo + sliceUs) - Math.max(a, lo);
          if (overlap > 0) acc[k] += overlap;
        }
      }
    }
    const label = members.length === 1 ? members[0].cloud : `${members[0].cloud} … ${members[members.length - 1].cloud}`;
    const segments: Segment[] = [];
    for (let k = 0; k < SLICES; k++) {
      let best = '';
      let bestUs = 0;
      let total = 0;
      for (const [state, acc] of busy) {
        total += acc[k];
        if (acc[k] > bestUs) {
          best = state;
          bestUs = acc[k];
        }
      }
      if (!best) continue;
      // Quartiles of busy-ness, so that neighbouring slices alike merge into one rectangle.
      const share = Math.min(1, Math.ceil((total / (sliceUs * members.length)) * 4) / 4);
      const fails = failedIn.get(k) ?? 0;
      const prev = segments[segments.length - 1];
      const lo = startUs + k * sliceUs;
      if (prev && prev.state === best && prev.share === share && Math.abs(prev.endUs - lo) < 1 && fails === 0) {
        prev.endUs = lo + sliceUs;
        continue;
      }
      segments.push({
        startUs: lo,
        endUs: lo + sliceUs,
        state: best,
        outcome: fails ? 'failed' : 'mixed',
        share,
        title: `${label}: mostly ${best}, ${Math.round(share * 100)}% busy${fails ? `, ${fails} failed` : ''}`,
      });
    }
    const states = members.map((s) => stepBucket(s.state));
    const finalState = WORST.find((w) => states.includes(w)) ?? STEP_COMPLETE;
    const failed = members.filter((s) => s.state === STEP_FAILED).length;
    lanes.push({ label, count: members.length, finalState: finalState === 'in progress' ? 'in progress' : finalState, failed, segments, failuresAt });
  }
  return lanes;
}

export function buildReport(input: ReportInput): ReportModel {
  const maxLanes = Math.max(1, input.maxLanesPerStage ?? DEFAULT_MAX_LANES);
  const runsOf = new Map<number, ReportRun[]>();
  for (const r of input.runs) {
    let list = runsOf.get(r.stepId);
    if (!list) runsOf.set(r.stepId, (list = []));
    list.push(r);
  }
  const counts: Record<string, number> = { initial: 0, 'in progress': 0, complete: 0, failed: 0, deferred: 0, aborted: 0 };
  for (const s of input.steps) counts[stepBucket(s.state)]++;

  const stepsOf = new Map<number, ReportStep[]>();
  for (const s of input.steps) {
    let list = stepsOf.get(s.stage);
    if (!list) stepsOf.set(s.stage, (list = []));
    list.push(s);
  }

  // Each stage draws at most maxLanes lanes; when they add up to more than the total budget, every
  // stage gets its share of it (at least 10 lanes).
  const wanted = input.stages.map((st) => Math.min(stepsOf.get(st.stage)?.length ?? 0, maxLanes));
  const sum = wanted.reduce((a, b) => a + b, 0);
  const budget = Math.max(1, input.maxTotalLanes ?? MAX_TOTAL_LANES);
  const laneLimit = wanted.map((w) => (sum > budget ? Math.max(10, Math.floor((budget * w) / sum)) : maxLanes));

  let startUs: number | null = null;
  let endUs: number | null = null;
  const stages: StageTimeline[] = input.stages.map((st, index) => {
    const steps = stepsOf.get(st.stage) ?? [];
    let a: number | null = null;
    let b: number | null = null;
    const stageCounts: Record<string, number> = { initial: 0, 'in progress': 0, complete: 0, failed: 0, deferred: 0, aborted: 0 };
    for (const s of steps) {
      stageCounts[stepBucket(s.state)]++;
      for (const r of runsOf.get(s.id) ?? []) {
        if (a === null || r.startUs < a) a = r.startUs;
        const e = runEnd(r, input.nowUs);
        if (b === null || e > b) b = e;
      }
    }
    if (a !== null && (startUs === null || a < startUs)) startUs = a;
    if (b !== null && (endUs === null || b > endUs)) endUs = b;
    const limit = laneLimit[index];
    const perLane = steps.length > limit ? Math.ceil(steps.length / limit) : 1;
    const lanes =
      perLane === 1
        ? singleLanes(steps, runsOf, input.nowUs)
        : groupedLanes(steps, runsOf, perLane, a ?? 0, b ?? 1, input.nowUs);
    const windows = a !== null && b !== null ? stageWindowSpans(input.events ?? [], st.stage, st.window, a, b) : [];
    return { stage: st.stage, group: st.group, window: st.window, steps: steps.length, startUs: a, endUs: b, perLane, lanes, counts: stageCounts, windows };
  });

  // Failures: each failed step, with the run it failed in.
  const failures: Failure[] = [];
  for (const s of input.steps) {
    if (s.state !== STEP_FAILED) continue;
    const runs = runsOf.get(s.id) ?? [];
    const last = [...runs].reverse().find((r) => r.outcome === 'failed' || r.outcome === 'timeout') ?? runs[runs.length - 1];
    const colon = s.details.indexOf(': ');
    failures.push({
      cloud: s.cloud,
      stage: s.stage,
      state: last?.state ?? (colon > 0 ? s.details.slice(0, colon) : ''),
      details: s.details,
      attempt: s.attempt,
      atUs: last ? runEnd(last, input.nowUs) : null,
    });
  }
  failures.sort((x, y) => (x.atUs ?? 0) - (y.atUs ?? 0));

  // Durations per state: the ok runs, plus how many failed there.
  const byState = new Map<string, { ok: number[]; failed: number }>();
  const stateOrder = [...input.states];
  for (const r of input.runs) {
    if (!byState.has(r.state)) {
      byState.set(r.state, { ok: [], failed: 0 });
      if (!stateOrder.includes(r.state)) stateOrder.push(r.state);
    }
    const e = byState.get(r.state)!;
    if (r.outcome === 'ok' && r.finishUs !== null) e.ok.push((r.finishUs - r.startUs) / 1000);
    else if (r.outcome === 'failed' || r.outcome === 'timeout') e.failed++;
  }
  const durations: DurationRow[] = [];
  for (const state of stateOrder) {
    const e = byState.get(state);
    if (!e) continue;
    const sorted = [...e.ok].sort((x, y) => x - y);
    const min = sorted[0] ?? 0;
    const max = sorted[sorted.length - 1] ?? 0;
    const histogram = new Array<number>(HISTOGRAM_BINS).fill(0);
    const width = (max - min) / HISTOGRAM_BINS;
    for (const v of sorted) histogram[width > 0 ? Math.min(HISTOGRAM_BINS - 1, Math.floor((v - min) / width)) : 0]++;
    durations.push({
      state,
      count: sorted.length,
      failed: e.failed,
      minMs: min,
      p50Ms: percentile(sorted, 50),
      p90Ms: percentile(sorted, 90),
      maxMs: max,
      meanMs: sorted.length ? sorted.reduce((x, y) => x + y, 0) / sorted.length : 0,
      histogram,
    });
  }

  // The slowest subclouds: from their first operation's start to their last one's end.
  const spans: { cloud: string; stage: number; ms: number; state: string }[] = [];
  for (const s of input.steps) {
    const runs = runsOf.get(s.id);
    if (!runs?.length) continue;
    let a = Infinity;
    let b = -Infinity;
    for (const r of runs) {
      a = Math.min(a, r.startUs);
      b = Math.max(b, runEnd(r, input.nowUs));
    }
    spans.push({ cloud: s.cloud, stage: s.stage, ms: (b - a) / 1000, state: s.state });
  }
  spans.sort((x, y) => y.ms - x.ms);

  return {
    events: placeEvents(input.events ?? [], stages),
    strategy: input.strategy,
    steps: input.steps.length,
    counts,
    startUs,
    endUs,
    stages,
    failures,
    durations,
    slowest: spans.slice(0, 10),
    states: stateOrder,
    failedRuns: failedRuns(input.steps, input.runs),
    attempts: siteAttempts(input.steps, input.runs),
    maxParallel: maxParallelHistory(input.events ?? [], input.strategy.maxParallelSubclouds),
  };
}

/**
 * Each event goes on one stage's drawing: the first stage that ran and had not ended by then
 * (an event between two stages, or before the first, is drawn at the start of the next one;
 * after the last, at its end).
 */
function placeEvents(events: readonly ReportEvent[], stages: readonly StageTimeline[]): PlacedEvent[] {
  const ran = stages.filter((st) => st.startUs !== null && st.endUs !== null);
  return events.map((e) => {
    const at = ran.find((st) => e.atUs <= st.endUs!) ?? ran[ran.length - 1];
    return { ...e, stage: at ? at.stage : null };
  });
}
