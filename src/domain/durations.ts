/**
 * Durations as people type them: `0`, `250ms`, `2s`, `1.5m`, `1h`. A number needs its unit (`10`
 * could mean 10 ms or 10 s; SPEC §4 refuses it), except `0`, which is the same in every unit.
 */
import { UsageError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * The longest duration dcm takes: a year. Longer is a typo (`9999999h`). (Node's timers cannot
 * wait more than about 24.8 days at once; whoever waits longer waits in steps, as the orchestrator
 * and the sim driver do.)
 */
export const MAX_DURATION_MS = 365 * 24 * 3_600_000;
export const MAX_DURATION_TEXT = '8760h (365 days)';

/** `unitRequired`: even `0` needs its unit (where a bare number is read as a count elsewhere). */
export interface DurationRules {
  unitRequired?: boolean;
}

/** Why `text` is not a duration, or null when it is one (see parseDuration). */
export function durationProblem(text: string, rules: DurationRules = {}): string | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) return 'use a number and a unit: 250ms, 10s, 5m, 1h';
  if (m[2] === undefined && (rules.unitRequired || Number(m[1]) !== 0)) return `give a unit: ${m[1]}s, ${m[1]}m`;
  if (Number(m[1]) * UNITS[m[2] ?? 'ms'] > MAX_DURATION_MS) return `the longest is ${MAX_DURATION_TEXT}`;
  return null;
}

/** Milliseconds, or null when `text` is not a duration dcm takes (durationProblem says why). */
export function parseDuration(text: string, rules: DurationRules = {}): number | null {
  if (durationProblem(text, rules) !== null) return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text)!;
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']);
}

/** `MIN..MAX` or a single duration (MIN = MAX). */
export function parseDurationRange(text: string, rules: DurationRules = {}): { min: number; max: number } | null {
  const parts = text.split('..');
  if (parts.length > 2) return null;
  const min = parseDuration(parts[0], rules);
  const max = parts.length === 2 ? parseDuration(parts[1], rules) : min;
  if (min === null || max === null || max < min) return null;
  return { min, max };
}

/** A duration option's value, or a usage error that says what is wrong with it. */
export function durationOption(option: string, text: string, opts: { allowZero?: boolean } = {}): number {
  const problem = durationProblem(text);
  const ms = problem === null ? parseDuration(text)! : null;
  if (ms === null || (ms === 0 && !opts.allowZero)) {
    throw new UsageError(`Invalid ${option} value: ${text}. ${capital(problem ?? 'it must be longer than 0')}`);
  }
  return ms;
}

/** A `MIN[..MAX]` option's value, or a usage error that says what is wrong with it. */
export function durationRangeOption(option: string, text: string): { min: number; max: number } {
  const bad = (why: string) => new UsageError(`Invalid ${option} value: ${text}. ${capital(why)}`);
  const parts = text.split('..');
  if (parts.length > 2) throw bad('use MIN[..MAX], e.g. 50ms..2s');
  const problem = parts.map((p) => durationProblem(p)).find((p) => p !== null);
  if (problem) throw bad(problem);
  const min = parseDuration(parts[0])!;
  const max = parts.length === 2 ? parseDuration(parts[1])! : min;
  if (max < min) throw bad('MAX must not be less than MIN');
  return { min, max };
}

/**
 * An age option's value (`db prune-logs --older 30d`): a duration as elsewhere, or days (`7d`),
 * which ages of kept files are counted in; `0` (any age) is allowed.
 */
export function ageOption(option: string, text: string): number {
  const days = /^\s*(\d+(?:\.\d+)?)\s*d\s*$/.exec(text);
  const asHours = days ? `${Number(days[1]) * 24}h` : text;
  const problem = durationProblem(asHours);
  if (problem !== null) {
    const n = /^\s*(\d+(?:\.\d+)?)\s*$/.exec(text)?.[1];
    const why = n !== undefined ? `give a unit: ${n}h, ${n}d` : problem.startsWith('use a number') ? 'use a number and a unit: 12h, 7d, 30m' : problem;
    throw new UsageError(`Invalid ${option} value: ${text}. ${capital(why)}`);
  }
  return parseDuration(asHours)!;
}

function capital(s: string): string {
  return s[0].toUpperCase() + s.slice(1);
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0 && ms > 0) return `${ms / 1000}s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)}s`;
  return `${ms}ms`;
}
