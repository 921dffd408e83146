/**
 * What an apply, a dry run or a status takes from the environment for tests, kept apart from the
 * faults themselves: the check that no test variable is set without DCM_TEST_HOOKS=1 (a stray
 * export in an operator's shell is a usage error, never a killed rollout), and the loading of
 * test-hooks.ts (kills, stops, a held lock, cost counters) only when the environment asks for
 * them, so that no fault-injection code is part of a real apply. The simulator puts its faults in
 * through the runtime instead (src/orchestrator/runtime.ts).
 */
import { UsageError } from '../domain/errors.js';
import type { CommitHooks, CostCounters } from './runtime.js';
import type { Clock } from '../platform/clock.js';

const HOOKS = ['DCM_CRASH_AFTER_COMMIT', 'DCM_BUSY_AT_COMMIT', 'DCM_STOP_IN_COMMIT', 'DCM_STOP_AFTER_COMMIT'];
const NAMES = [...HOOKS, 'DCM_COUNTERS', 'DCM_TEST_CLOCK'];

/** A test variable without DCM_TEST_HOOKS=1 is a usage error, checked before anything is read. */
export function checkTestEnv(env: NodeJS.ProcessEnv): void {
  if (env.DCM_TEST_HOOKS === '1') return;
  const name = NAMES.find((n) => env[n] !== undefined);
  if (name) throw new UsageError(`${name} is a test hook: it needs DCM_TEST_HOOKS=1`);
}

export interface ApplyTestHooks {
  hooks: CommitHooks | null;
  counters: (db: Parameters<typeof import('./test-hooks.js').costCounters>[1]) => { counters: CostCounters; file: string } | null;
}

/** The commit hooks and cost counters the environment asks for; test-hooks.ts is loaded only then. */
export async function applyTestHooks(env: NodeJS.ProcessEnv, file: string): Promise<ApplyTestHooks> {
  checkTestEnv(env);
  if (env.DCM_TEST_HOOKS !== '1' || ![...HOOKS, 'DCM_COUNTERS'].some((n) => env[n] !== undefined)) return { hooks: null, counters: () => null };
  const t = await import('./test-hooks.js');
  return { hooks: t.commitHooks(env, file), counters: (db) => t.costCounters(env, db) };
}

/**
 * The clock maintenance windows are decided by: the real one, or (`DCM_TEST_HOOKS=1
 * DCM_TEST_CLOCK=ISO`) one set to ISO now and running on at the real pace, so that a test shows
 * a window that opens in a few seconds without waiting for Saturday. A clock that stood still
 * would never reach the opening its timer waits for.
 */
export function windowClock(env: NodeJS.ProcessEnv, clock: Clock): () => number {
  const at = env.DCM_TEST_CLOCK;
  if (at === undefined) return clock.wall;
  checkTestEnv(env);
  const start = Date.parse(at);
  if (!Number.isFinite(start)) throw new UsageError(`invalid DCM_TEST_CLOCK '${at}': give an ISO time, e.g. 2026-12-05T21:59:55Z`);
  const offset = start - clock.wall();
  return () => clock.wall() + offset;
}
