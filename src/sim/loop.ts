/**
 * The simulator's time: one virtual clock and the events due on it, run one at a time in order of
 * their time (ties in the order they were set). Every simulated process, site and operator sets its
 * delays here, through the runtime it was given (hosts.ts), never through the process's own timers:
 * nothing global is replaced, and the simulator runs in any thread beside real code.
 *
 * Between two events the loop lets everything already set going run to its next wait: the
 * microtasks of the processes' chains (a file's statements answer at once), and on a server the
 * queries out (`settleExtra`).
 */

/** The epoch a schedule starts at (a fixed moment: a seed replays the same timestamps). */
export const SIM_EPOCH = Date.UTC(2026, 0, 5, 9, 0, 0);

/** The real event loop's next turn: every microtask queued before it has run. */
const realTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface Event {
  t: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

export class Loop {
  /** Virtual ms since the schedule began. */
  now = 0;
  private heap: Event[] = [];
  private seq = 0;
  /** Events run so far (a schedule that never ends is cut off by count as well as by time). */
  ran = 0;
  /** On a server: resolves once no query is out whose answer could still come (sim-db.ts). */
  settleExtra: (() => Promise<void>) | null = null;

  at(t: number, fn: () => void): Event {
    const e: Event = { t: Math.max(t, this.now), seq: this.seq++, fn, cancelled: false };
    this.push(e);
    return e;
  }

  after(ms: number, fn: () => void): Event {
    return this.at(this.now + (Number.isFinite(ms) && ms > 0 ? ms : ms === Infinity ? Number.MAX_SAFE_INTEGER : 0), fn);
  }

  cancel(e: Event): void {
    e.cancelled = true;
  }

  /** When the next live event is due (Infinity: none). */
  next(): number {
    while (this.heap.length && this.heap[0].cancelled) this.pop();
    return this.heap.length ? this.heap[0].t : Infinity;
  }

  /** Everything going runs to its next wait. */
  async settle(): Promise<void> {
    await realTurn();
    if (this.settleExtra) {
      await this.settleExtra();
      await realTurn();
    }
  }

  /** Run the next event due no later than `until` (settle first); false when there is none. */
  step(until = Infinity): boolean {
    const t = this.next();
    if (t === Infinity || t > until) return false;
    const e = this.pop()!;
    this.now = e.t;
    this.ran++;
    e.fn();
    return true;
  }

  private push(e: Event): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  private pop(): Event | undefined {
    const h = this.heap;
    if (!h.length) return undefined;
    const top = h[0];
    const last = h.pop()!;
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l], h[m])) m = l;
        if (r < h.length && before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Event, b: Event): boolean {
  return a.t < b.t || (a.t === b.t && a.seq < b.seq);
}
