/**
 * The rollout as Prometheus reads it (`apply --metrics-textfile PATH`, node_exporter's textfile
 * collector): the text exposition format, version 0.0.4, drawn from a snapshot of the store. Pure:
 * counts in, text out. The names follow Prometheus' conventions: a `dcm_strategy_` prefix, base
 * units (seconds), `_total` on counters, an enum as one 0/1 series per value, and every series
 * labelled with the strategy (the id `strategy list` shows) and its type.
 */

/** What the file shows, as the store holds it at one moment. */
export interface MetricsSnapshot {
  /** The strategy's id (domain/logs.ts strategyIdOf) and type: the labels of every series. */
  strategy: string;
  type: string;
  /** The strategy's state now. */
  state: string;
  /** Steps by the state they are in (the type's states and initial, complete, failed, deferred, aborted). */
  steps: Record<string, number>;
  /** Runs (state operations) started, and ended by outcome (ok, failed, timeout, skipped, interrupted, deferred, unknown). */
  runsStarted: number;
  runsEnded: Record<string, number>;
  runsInFlight: number;
  /** The running stage (null: none yet, or every stage ended) and its window. */
  stage: number | null;
  window: number | null;
  /** The start rate in force in the running stage, starts a minute (null: none). */
  startRatePerMin: number | null;
  /** Stage gates that held the strategy (their budget spent, a check failed). */
  gateHolds: number;
  /** The plan digest the strategy was created from (null: none kept). */
  planDigest: string | null;
  /** When this snapshot was read (epoch ms). */
  atMs: number;
}

/** Every state a strategy can be in: the enum's series are written for each, 0 but the one it is in. */
export const STRATEGY_STATES = ['initial', 'applying', 'paused', 'abort requested', 'aborting', 'complete', 'failed', 'aborted'] as const;

/** The step states always written (0 when none), besides the type's own. */
const STEP_STATES = ['initial', 'complete', 'failed', 'deferred', 'aborted'];

/** The run outcomes always written (0 when none). */
export const RUN_OUTCOMES = ['ok', 'failed', 'timeout', 'skipped', 'interrupted', 'deferred', 'unknown'] as const;

/** A metric's name, type and help, in the order the file has them (the guide documents this table). */
export const METRICS = [
  ['dcm_strategy_info', 'gauge', 'The strategy (always 1), with the plan digest it was created from.'],
  ['dcm_strategy_state', 'gauge', 'The state the strategy is in: 1 for its state, 0 for the others.'],
  ['dcm_strategy_steps', 'gauge', 'Steps (subclouds) by the state they are in.'],
  ['dcm_strategy_runs_started_total', 'counter', 'State operations started (each attempt of each state of each subcloud).'],
  ['dcm_strategy_runs_ended_total', 'counter', 'State operations ended, by outcome.'],
  ['dcm_strategy_runs_in_flight', 'gauge', 'State operations running now.'],
  ['dcm_strategy_stage', 'gauge', 'The stage running now (the last one once every stage has ended).'],
  ['dcm_strategy_window_subclouds', 'gauge', 'The running stage\'s window: subclouds in flight at most.'],
  ['dcm_strategy_start_rate_per_second', 'gauge', 'The start rate in force in the running stage (first starts a second; absent without a rate).'],
  ['dcm_strategy_gate_holds_total', 'counter', 'Times a stage gate held the strategy (its failure budget spent, its check failed).'],
  ['dcm_strategy_metrics_timestamp_seconds', 'gauge', 'When this file was written (Unix time).'],
] as const;

/** A label value escaped as the format asks: backslash, double quote and newline. */
export function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** A sample's value as the format writes it (integers as they are, NaN and infinities by name). */
function num(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(12)));
}

/** The file's text for `s`. */
export function renderMetrics(s: MetricsSnapshot): string {
  const base = `strategy="${escapeLabel(s.strategy)}",type="${escapeLabel(s.type)}"`;
  const samples = new Map<string, string[]>();
  const add = (name: string, value: number, labels: Record<string, string> = {}) => {
    const extra = Object.entries(labels).map(([k, v]) => `,${k}="${escapeLabel(v)}"`).join('');
    let list = samples.get(name);
    if (!list) samples.set(name, (list = []));
    list.push(`${name}{${base}${extra}} ${num(value)}`);
  };
  add('dcm_strategy_info', 1, { plan_digest: s.planDigest ?? '' });
  const states: string[] = [...STRATEGY_STATES];
  if (!states.includes(s.state)) states.push(s.state);
  for (const st of states) add('dcm_strategy_state', st === s.state ? 1 : 0, { state: st });
  const stepStates = [...STEP_STATES, ...Object.keys(s.steps).filter((k) => !STEP_STATES.includes(k)).sort()];
  for (const st of stepStates) add('dcm_strategy_steps', s.steps[st] ?? 0, { state: st });
  add('dcm_strategy_runs_started_total', s.runsStarted);
  const outcomes: string[] = [...RUN_OUTCOMES, ...Object.keys(s.runsEnded).filter((k) => !(RUN_OUTCOMES as readonly string[]).includes(k)).sort()];
  for (const o of outcomes) add('dcm_strategy_runs_ended_total', s.runsEnded[o] ?? 0, { outcome: o });
  add('dcm_strategy_runs_in_flight', s.runsInFlight);
  if (s.stage !== null) add('dcm_strategy_stage', s.stage);
  if (s.window !== null) add('dcm_strategy_window_subclouds', s.window);
  if (s.startRatePerMin !== null) add('dcm_strategy_start_rate_per_second', s.startRatePerMin / 60);
  add('dcm_strategy_gate_holds_total', s.gateHolds);
  add('dcm_strategy_metrics_timestamp_seconds', s.atMs / 1000);
  const out: string[] = [];
  for (const [name, type, help] of METRICS) {
    const list = samples.get(name);
    if (!list) continue;
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...list);
  }
  return `${out.join('\n')}\n`;
}
