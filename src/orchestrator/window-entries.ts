/**
 * What a stage's window (window.ts) holds of each step, and the order its subclouds wait in at
 * the gate: a step caught mid-state before a new one, then by id, as the cursor reads them.
 */
import type { CursorStep } from '../store/cursor.js';

/**
 * A step caught mid-state by the last process goes on as it was (it is in flight); the rest are
 * new. A deferred step is new too: it holds no slot, and a pause or an abort holds it back.
 */
export const kindOf = (s: CursorStep): 'new' | 'resumed' => (s.state !== 'initial' && s.state !== 'deferred' && !s.retried ? 'resumed' : 'new');

/**
 * A step in the window: read and queued in the limiter (not yet `started`), or its task going (at
 * the gate, or `running` in a slot). Until it runs, `step` is the latest read of it.
 */
export interface Entry {
  step: CursorStep;
  started: boolean;
  running: boolean;
  /** Queued, then taken up by `add` (which runs beside the limiter): the limiter's turn does nothing. */
  superseded?: boolean;
}

export interface Waiter {
  step: CursorStep;
  wake: () => void;
}

/** Whether `a` waits at the gate before `b`: those caught mid-state first, then in step order. */
export function before(a: CursorStep, b: CursorStep): boolean {
  const ka = kindOf(a) === 'resumed' ? 0 : 1;
  const kb = kindOf(b) === 'resumed' ? 0 : 1;
  return ka !== kb ? ka < kb : a.id < b.id;
}
