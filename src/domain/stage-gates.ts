/**
 * Stage gates (issue 18, "Rolling out safely"), the pure part: a stage's own failure budget
 * (`--stage-max-failures N|P%`, Ansible's per-batch rule: the stage stops starting subclouds once
 * its failures *exceed* it) and the gate between a stage and the next (`--stage-gate
 * none|pause|soak=DURATION|check`). What to do after a stage is decided here from plain data and
 * the time given; the orchestrator writes it, waits and runs the check. No SQLite, no clock, no
 * process.
 */
import { visibleLine } from './outside-text.js';
import { durationProblem, formatDuration, parseDuration } from './durations.js';
import { UsageError } from './errors.js';
import { formatMaxFailures, readFailureBudget, type MaxFailures } from './control.js';

export type StageGate = { kind: 'none' } | { kind: 'pause' } | { kind: 'soak'; ms: number } | { kind: 'check' };

export const STAGE_GATE_KINDS = ['none', 'pause', 'soak=DURATION', 'check'] as const;

/** `none`, `pause`, `soak=30m`, `check`. Anything else is a usage error naming the option. */
export function parseStageGate(text: string): StageGate {
  const t = text.trim();
  if (t === 'none' || t === 'pause' || t === 'check') return { kind: t };
  const soak = /^soak=(.*)$/.exec(t);
  if (soak) {
    const problem = durationProblem(soak[1]);
    const ms = problem === null ? parseDuration(soak[1]) : null;
    if (ms === null || ms === 0) throw new UsageError(`invalid --stage-gate '${text}': soak needs a duration longer than 0 (${problem ?? 'e.g. soak=30m'})`);
    return { kind: 'soak', ms };
  }
  throw new UsageError(`invalid --stage-gate '${text}': choose none, pause, soak=DURATION (e.g. soak=30m) or check`);
}

/** As it is stored and shown: `none`, `pause`, `soak=30m`, `check`. */
export function formatStageGate(g: StageGate): string {
  return g.kind === 'soak' ? `soak=${formatDuration(g.ms)}` : g.kind;
}

/** `--stage-max-failures N|P%`, read as `--max-failures` is, but 0 is allowed (any failure exceeds it). */
export function parseStageMaxFailures(text: string): MaxFailures {
  const m = readFailureBudget(text);
  if (m && 'percent' in m) {
    if (m.percent <= 100) return m;
    throw new UsageError(`invalid --stage-max-failures '${text}': a percentage must be at most 100%`);
  }
  if (m) return m;
  throw new UsageError(`invalid --stage-max-failures '${text}': give a number of failed steps (0 or more) or a percentage of the stage's steps (25%)`);
}

/** As it is stored and shown, as `--max-failures` is: `0`, `25%`. */
export const formatStageMaxFailures = formatMaxFailures;

/**
 * The number of failed steps a stage may have, or null for no budget of its own. A percentage is
 * of the stage's steps, rounded down (Ansible: the batch fails when its failed share is above the
 * percentage), so `25%` of 4 steps allows 1 failure and stops the stage at the 2nd.
 */
export function stageFailureLimit(stored: string | null, stageSteps: number): number | null {
  if (stored === null) return null;
  const m = parseStageMaxFailures(stored);
  if ('count' in m) return m.count;
  return Math.floor((m.percent * stageSteps) / 100 + 1e-9);
}

/** The stage stops starting subclouds once its failures exceed its budget (not when they reach it). */
export function stageBudgetExceeded(failed: number, limit: number | null): boolean {
  return limit !== null && failed > limit;
}

/**
 * A stage's gate as the file keeps it: null before the stage has ended; then `soaking` or
 * `checking` while the gate runs, `held` (its budget exceeded) or `paused` (a pause gate, a failed
 * check) while the strategy waits for `dcm strategy resume`, and `passed` or `promoted` (resumed by
 * the operator) once the next stage may start.
 */
export type GateState = 'soaking' | 'checking' | 'held' | 'paused' | 'passed' | 'promoted';
export const GATE_STATES: readonly GateState[] = ['soaking', 'checking', 'held', 'paused', 'passed', 'promoted'];
/** A gate still going: its stage has ended, the next has not started. */
export const PENDING_GATES: readonly GateState[] = ['soaking', 'checking', 'held', 'paused'];

export interface StageEnd {
  stage: number;
  /** The next stage, or null when this is the last (a gate is only ever between two stages). */
  next: number | null;
  gate: StageGate;
  /** As stored; null: the stage has not reached its gate. */
  state: GateState | null;
  failed: number;
  limit: number | null;
  /** Steps of the stage not started (a budget that stopped the stage leaves some). */
  notStarted: number;
  /** When the stage's last step ended (epoch ms), and when a soak ends, as stored. */
  endedMs: number | null;
  dueMs: number | null;
  /** The strategy is paused in the file (by a gate, or by the operator). */
  paused: boolean;
  nowMs: number;
}

/** What the orchestrator does once a stage's window has run. */
export type GateAction =
  /** The next stage may start (`record`: the outcome to write, when it changes). */
  | { kind: 'go'; record?: { state: 'passed' | 'promoted'; reason: string } }
  /** Pause the strategy with this reason and wait for a resume (`state`: held or paused). */
  | { kind: 'pause'; state: 'held' | 'paused'; reason: string }
  /** Already paused by this gate: wait for a resume. */
  | { kind: 'wait' }
  /** Soak until `dueMs` (written when the soak starts, so that a restart waits only the rest). */
  | { kind: 'soak'; dueMs: number; start: boolean }
  | { kind: 'check' }
  /** Some of the stage has not started and nothing holds it (promoted, or its budget raised since): run the rest first. */
  | { kind: 'again' };

/** The decision after a stage's window has run (SPEC-style rules in the README's "Stage gates"). */
export function afterStage(s: StageEnd): GateAction {
  if (s.state === 'passed' || s.state === 'promoted') return s.notStarted > 0 ? { kind: 'again' } : { kind: 'go' };
  // Paused by this gate and resumed since (while no apply ran, or just now): the operator promoted it.
  if (s.state === 'held' || s.state === 'paused') {
    return s.paused ? { kind: 'wait' } : { kind: 'go', record: { state: 'promoted', reason: `stage ${s.stage} promoted by \`dcm strategy resume\`` } };
  }
  if (stageBudgetExceeded(s.failed, s.limit) && (s.next !== null || s.notStarted > 0)) {
    const left = s.notStarted > 0 ? `; ${s.notStarted} of its subcloud(s) not started` : '';
    const then = s.next !== null ? `, then stage ${s.next}` : '';
    return {
      kind: 'pause',
      state: 'held',
      reason: `stage ${s.stage}: ${s.failed} step(s) failed, more than its budget of ${s.limit} (--stage-max-failures)${left}; \`dcm strategy resume\` runs the rest of stage ${s.stage}${then}`,
    };
  }
  // A window stops early only for a stop or the budget: with neither now, the rest of it runs first.
  if (s.notStarted > 0) return { kind: 'again' };
  if (s.next === null || s.gate.kind === 'none') return { kind: 'go' };
  if (s.gate.kind === 'pause') {
    return { kind: 'pause', state: 'paused', reason: `stage ${s.stage} ended (gate pause); \`dcm strategy resume\` starts stage ${s.next}` };
  }
  if (s.gate.kind === 'soak') {
    // From the stage's stored end, so that a restart waits only the rest and a soak changed by
    // `strategy update` while it runs counts from the same end; the stored due time is what status
    // shows, written again when it changes.
    const dueMs = s.endedMs !== null ? s.endedMs + s.gate.ms : (s.dueMs ?? s.nowMs + s.gate.ms);
    if (s.nowMs >= dueMs) return { kind: 'go', record: soakDone(s) };
    return { kind: 'soak', dueMs, start: s.state !== 'soaking' || s.dueMs !== dueMs };
  }
  return { kind: 'check' };
}

function soakDone(s: StageEnd): { state: 'passed'; reason: string } {
  return { state: 'passed', reason: `stage ${s.stage} soaked ${formatDuration(s.gate.kind === 'soak' ? s.gate.ms : 0)}; stage ${s.next} starts` };
}

/** A check's outcome: exit 0 promotes; anything else pauses with the code and its last line. */
export function checkOutcome(
  stage: number,
  next: number,
  r: { code: number | null; signal: string | null; lastLine: string },
): { kind: 'go'; record: { state: 'passed'; reason: string } } | { kind: 'pause'; state: 'paused'; reason: string } {
  if (r.code === 0) return { kind: 'go', record: { state: 'passed', reason: `stage ${stage} gate check passed; stage ${next} starts` } };
  const how = r.code !== null ? `exited ${r.code}` : `was killed by ${r.signal ?? 'a signal'}`;
  // The check's own words are outside text: escaped and cut (outside-text.ts), whoever read them.
  const said = visibleLine(r.lastLine);
  const line = said ? `: ${said}` : '';
  return { kind: 'pause', state: 'paused', reason: `stage ${stage} gate check ${how}${line}; \`dcm strategy resume\` starts stage ${next}` };
}

/** A stage's gate and budget as `strategy status` shows them: `stage 1: pause, max failures 0: paused (...)`. */
export function gateText(g: { stage: number; gate: string; maxFailures: string | null; state: string | null; reason: string | null; last?: boolean }): string {
  const budget = g.maxFailures === null ? '' : `, max failures ${g.maxFailures}`;
  // A gate is between two stages: the last stage's is never run (its budget still holds).
  if (g.last && g.gate !== 'none' && g.state === null) return `stage ${g.stage}: ${g.gate} (last stage: no gate after it)${budget}`;
  const outcome = g.state === null ? '' : `: ${g.state}${g.reason ? ` (${g.reason})` : ''}`;
  return `stage ${g.stage}: ${g.gate}${budget}${outcome}`;
}

/**
 * Each stage's line (gateText), or null when every stage has the defaults (no budget of its own,
 * gate none) and no gate ran: what status and the report show.
 */
export function gateLines(rows: readonly { stage: number; gate: string; max_failures: string | null; gate_state: string | null; gate_reason: string | null }[]): string[] | null {
  if (rows.every((r) => r.gate === 'none' && r.max_failures === null && r.gate_state === null)) return null;
  return rows.map((r, i) => gateText({ stage: r.stage, gate: r.gate, maxFailures: r.max_failures, state: r.gate_state, reason: r.gate_reason, last: i === rows.length - 1 }));
}
