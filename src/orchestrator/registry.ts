/**
 * The registry of running workers (SPEC §1): for each subcloud, the one state operation running
 * for it, tagged with its state and an operation id. This module is the only place its map is
 * written (a test reads src/ and says so): an entry is made before the driver is called, and
 * removed only when the orchestrator settles the report of that very operation. A report that
 * does not match the entry (a late answer after a timeout) settles nothing.
 *
 * Owns: the map, the operation ids. Never touches: the store, the driver, the window, timers. It
 * is never handed to a driver or a state operation.
 */
import type { CursorStep } from '../store/cursor.js';

/** One entry: the operation running for a subcloud, tagged with its state. */
export interface Worker {
  step: CursorStep;
  state: string;
  attempt: number;
  historyId: number;
  opId: number;
  /** Made only when the driver asks for the signal: most operations never need one. */
  controller: AbortController | null;
  /** The orchestrator stopped waiting (timeout, hard stop): a signal asked for later is aborted. */
  abandoned: boolean;
  /** When the operation started (epoch ms): its duration goes to the statistics and the progress. */
  startedMs: number;
}

export class Registry {
  private readonly map = new Map<number, Worker>();
  private nextOpId = 1;

  constructor(private readonly now: () => number) {}

  /** A worker for an operation, not in the registry yet (an adopted run gets its entry once it has its slot). */
  make(step: CursorStep, state: string, attempt: number, historyId: number): Worker {
    return { step, state, attempt, historyId, opId: this.nextOpId++, controller: null, abandoned: false, startedMs: this.now() };
  }

  /** Its entry, made before its operation is called; a second worker for one subcloud is refused. */
  add(worker: Worker): void {
    const existing = this.map.get(worker.step.id);
    if (existing) {
      throw new Error(`internal: ${worker.step.cloud} already runs ${existing.state}; refusing a second worker for ${worker.state}`);
    }
    this.map.set(worker.step.id, worker);
  }

  /** The report of operation `opId` settles its entry: the worker it was, or null for a stale report. */
  settle(stepId: number, opId: number): Worker | null {
    const w = this.map.get(stepId);
    if (!w || w.opId !== opId) return null;
    this.map.delete(stepId);
    return w;
  }

  /** Operation `opId` is still the one running for its subcloud. */
  current(stepId: number, opId: number): boolean {
    return this.map.get(stepId)?.opId === opId;
  }

  get(stepId: number): Worker | undefined {
    return this.map.get(stepId);
  }

  has(stepId: number): boolean {
    return this.map.has(stepId);
  }

  get size(): number {
    return this.map.size;
  }

  /** A copy: the callers act on the entries, never on the map. */
  list(): Worker[] {
    return [...this.map.values()];
  }
}

/** The orchestrator stops waiting for `w`: its signal aborts, now or when the driver asks for it. */
export function abandon(w: Worker): void {
  w.abandoned = true;
  w.controller?.abort();
}
