/**
 * Values that must come from a fixed set (SPEC §4 "Visibility"): a value outside it is an error
 * that says what is valid, never an empty result. Pure.
 */
import { UsageError } from './errors.js';
import { STEP_ABORTED, STEP_COMPLETE, STEP_DEFERRED, STEP_FAILED, STEP_INITIAL, STRATEGY_TYPES, statesOf } from './types.js';

/** Every state a step of any built-in type can be in: the common ones first, then each type's. */
export function allStepStates(): string[] {
  const out = [STEP_INITIAL, STEP_COMPLETE, STEP_FAILED, STEP_ABORTED, STEP_DEFERRED];
  for (const t of STRATEGY_TYPES) {
    for (const s of statesOf(t, { cert_file: 'x' })) if (!out.includes(s)) out.push(s);
  }
  return out;
}

/** Optimal string alignment distance (edits, with transpositions), case-insensitive. */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2] + 1);
      cur.push(d);
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The candidates that look like a mistyping of `word` (at most a third of its letters wrong),
 * nearest first; ties keep the candidates' order.
 */
export function nearest(word: string, candidates: readonly string[], max = 3): string[] {
  const limit = Math.max(1, Math.floor(Math.max(word.length, 3) / 3));
  return candidates
    .map((c, i) => ({ c, i, d: editDistance(word, c) }))
    .filter((x) => x.d <= limit)
    .sort((x, y) => x.d - y.d || x.i - y.i)
    .slice(0, max)
    .map((x) => x.c);
}

/** `'a', 'b', 'c' and 7 more`: a few names of a long list, quoted. */
export function someOf(names: readonly string[], max = 5): string {
  const shown = names.slice(0, max).map((n) => `'${n}'`);
  const rest = names.length - shown.length;
  return rest > 0 ? `${shown.join(', ')} and ${rest} more` : shown.join(', ');
}

/** ` (did you mean 'x'?)`, or nothing when no candidate is close. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const near = nearest(word, candidates, 1);
  return near.length ? ` (did you mean '${near[0]}'?)` : '';
}

/** `--state` values: every one must be a step state (of any type, or of the strategy's own). */
export function checkStepStates(states: readonly string[] | undefined, extra: readonly string[] = []): void {
  if (!states?.length) return;
  const valid = [...allStepStates(), ...extra.filter((s) => !allStepStates().includes(s))];
  for (const s of states) {
    if (valid.includes(s)) continue;
    throw new UsageError(`invalid --state '${s}'${didYouMean(s, valid)}; valid states: ${valid.map((v) => `'${v}'`).join(', ')}`);
  }
}

/**
 * `--sim-fail CLOUD=STATE` names subclouds that exist: a typo would otherwise inject nothing and
 * the rehearsal would pass for the wrong reason.
 */
export function checkSimFailClouds(items: readonly string[], known: ReadonlySet<string>, all: readonly string[]): void {
  for (const item of items) {
    const cloud = item.slice(0, item.indexOf('='));
    if (known.has(cloud)) continue;
    if (all.length === 0) throw new UsageError(`Invalid --sim-fail cloud '${cloud}': there are no subclouds`);
    const near = nearest(cloud, all, 5);
    const shown = [...near, ...all.filter((n) => !near.includes(n))];
    throw new UsageError(`Invalid --sim-fail cloud '${cloud}'${didYouMean(cloud, all)}; known subclouds include ${someOf(shown)}`);
  }
}
