/**
 * The runs a post-mortem reads, from the steps and their history (pure): every run that did not
 * end ok, each with whether a later run of the same state recovered it, and each site's attempts
 * per state. Hover-only bars on a timeline are no record; these are printed as tables.
 */
import type { ReportRun, ReportStep } from './report.js';

/** The outcomes a post-mortem lists: the run did not end ok (an `interrupted` one was cut off by a kill or a stop). */
export const BAD_OUTCOMES: readonly string[] = ['failed', 'timeout', 'interrupted'];

export interface FailedRun {
  cloud: string;
  stage: number;
  state: string;
  attempt: number;
  outcome: string;
  details: string;
  startUs: number;
  finishUs: number | null;
  /** The later run of the same state that ended ok (a retry: the config's, `strategy retry`'s, or a resume's); null if none has. */
  recoveredBy: { attempt: number; atUs: number } | null;
  /** The step's state now: what became of it when no run recovered it. */
  stepState: string;
}

export interface StateAttempts {
  state: string;
  runs: number;
  /** Each run's outcome, in attempt order. */
  outcomes: string[];
}

export interface SiteAttempts {
  cloud: string;
  stage: number;
  stepState: string;
  runs: number;
  /** In the order the site first ran each state. */
  states: StateAttempts[];
  /** Some state ran more than once, or some run did not end ok. */
  eventful: boolean;
}

function byStep(runs: readonly ReportRun[]): Map<number, ReportRun[]> {
  const out = new Map<number, ReportRun[]>();
  for (const r of runs) {
    let list = out.get(r.stepId);
    if (!list) out.set(r.stepId, (list = []));
    list.push(r);
  }
  return out;
}

/** Every run that did not end ok, in the order they started. */
export function failedRuns(steps: readonly ReportStep[], runs: readonly ReportRun[]): FailedRun[] {
  const stepOf = new Map(steps.map((s) => [s.id, s]));
  const runsOf = byStep(runs);
  const out: FailedRun[] = [];
  for (const r of runs) {
    if (!BAD_OUTCOMES.includes(r.outcome)) continue;
    const s = stepOf.get(r.stepId);
    if (!s) continue;
    const later = (runsOf.get(r.stepId) ?? []).find((o) => o.state === r.state && o.outcome === 'ok' && o.attempt > r.attempt && o.finishUs !== null);
    out.push({
      cloud: s.cloud,
      stage: s.stage,
      state: r.state,
      attempt: r.attempt,
      outcome: r.outcome,
      details: r.details,
      startUs: r.startUs,
      finishUs: r.finishUs,
      recoveredBy: later ? { attempt: later.attempt, atUs: later.finishUs! } : null,
      stepState: s.state,
    });
  }
  return out;
}

/** Each site's runs per state: how many, and how each ended. In step order. */
export function siteAttempts(steps: readonly ReportStep[], runs: readonly ReportRun[]): SiteAttempts[] {
  const runsOf = byStep(runs);
  return steps.map((s) => {
    const mine = [...(runsOf.get(s.id) ?? [])].sort((a, b) => a.startUs - b.startUs);
    const states = new Map<string, ReportRun[]>();
    for (const r of mine) {
      let list = states.get(r.state);
      if (!list) states.set(r.state, (list = []));
      list.push(r);
    }
    const perState = [...states].map(([state, list]) => ({
      state,
      runs: list.length,
      outcomes: [...list].sort((a, b) => a.attempt - b.attempt).map((r) => r.outcome),
    }));
    return {
      cloud: s.cloud,
      stage: s.stage,
      stepState: s.state,
      runs: mine.length,
      states: perState,
      eventful: perState.some((p) => p.runs > 1 || p.outcomes.some((o) => o !== 'ok')),
    };
  });
}
