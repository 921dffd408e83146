/** A stage's window on its own: a fake host, no database, no driver. */
import { realRuntime } from '../../src/platform/runtime.js';
import { describe, expect, test } from '@jest/globals';
import { StageWindow } from '../../src/orchestrator/window.js';
import type { Gate } from '../../src/domain/control.js';
import type { CursorStep } from '../../src/store/cursor.js';
import { waitFor } from '../helpers/cli.js';

const step = (id: number, state = 'initial', retried = false): CursorStep => ({ id, subcloudId: id, cloud: `s${id}`, stage: 1, state, attempt: 0, retried });

/** A host whose subclouds end when the test says; it records what started and how many at once. */
function host(steps: CursorStep[]) {
  let next = 0;
  const gate: Gate = { newSubclouds: true, operations: true, stopping: false };
  const failures: Error[] = [];
  const running = new Map<number, (ended: boolean) => void>();
  const started: number[] = [];
  let peak = 0;
  let fetched = 0;
  return {
    gate,
    running,
    started,
    peak: () => peak,
    fetched: () => fetched,
    host: {
      async fetch(limit: number) {
        const out = steps.slice(next, next + limit);
        next += out.length;
        fetched = Math.max(fetched, out.length);
        return out;
      },
      gate: () => gate,
      failed: (e: Error) => failures.push(e),
      run(s: CursorStep) {
        started.push(s.id);
        return new Promise<boolean>((resolve) => {
          running.set(s.id, (ended) => {
            running.delete(s.id);
            resolve(ended);
          });
          peak = Math.max(peak, running.size);
        });
      },
    },
  };
}

const tick = () => new Promise((r) => setImmediate(r));

async function endAll(h: ReturnType<typeof host>): Promise<void> {
  for (const end of [...h.running.values()]) end(true);
  await tick();
}

describe('StageWindow', () => {
  test('starts at most the window, in order, and ends once every step has ended; reads ahead no more than the window', async () => {
    const h = host(Array.from({ length: 10 }, (_, i) => step(i + 1)));
    const w = new StageWindow(3, h.host, realRuntime());
    let done = false;
    const run = w.run().then(() => (done = true));
    await tick();
    expect(h.started).toEqual([1, 2, 3]);
    h.running.get(2)!(true);
    await tick();
    expect(h.started).toEqual([1, 2, 3, 4]);
    while (h.running.size) await endAll(h);
    await run;
    expect(done).toBe(true);
    expect(h.started).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(h.peak()).toBe(3);
    expect(h.fetched()).toBeLessThanOrEqual(3);
  });

  // Simulator seed 1794911513: after a kill and a window made 1, the steps caught mid-state went on
  // one at a time; as one ended, a deferred step's next try (added beside the limiter) took the
  // slot before the next step caught mid-state, still queued in the limiter, reached the gate: a
  // new start with a subcloud in flight, in a window of 1.
  test('steps caught mid-state go before a deferred step that came due, whatever the limiter queued: they are in flight', async () => {
    const h = host([step(3, 'pre check'), step(4, 'pre check'), step(5, 'pre check')]);
    const w = new StageWindow(1, h.host, realRuntime());
    const run = w.run();
    await tick();
    expect(h.started).toEqual([3]);
    // Step 1 was deferred; its next try comes due while 3 runs.
    w.add(step(1, 'deferred'));
    await tick();
    // 3 ends in the commit being made: its slot is lent, to 4, caught mid-state, not to 1.
    expect(w.lend([3])).toBe(1);
    await tick();
    expect(h.started).toEqual([3, 4]);
    h.running.get(3)!(true);
    await tick();
    expect(h.started).toEqual([3, 4]);
    h.running.get(4)!(true);
    await tick();
    expect(h.started).toEqual([3, 4, 5]);
    h.running.get(5)!(true);
    await tick();
    expect(h.started).toEqual([3, 4, 5, 1]);
    while (h.running.size) await endAll(h);
    await run;
  });

  test('paused: starts none, in flight end; a subcloud held back before it started is kept and starts first on resume', async () => {
    const h = host(Array.from({ length: 6 }, (_, i) => step(i + 1)));
    const w = new StageWindow(2, h.host, realRuntime());
    const run = w.run();
    await tick();
    expect(h.started).toEqual([1, 2]);
    h.gate.newSubclouds = false;
    // 2 was queued but held back (the orchestrator releases it unstarted).
    h.running.get(2)!(false);
    h.running.get(1)!(true);
    await tick();
    expect(h.started).toEqual([1, 2]);
    expect(h.running.size).toBe(0);
    h.gate.newSubclouds = true;
    w.pump();
    await tick();
    expect(h.started).toEqual([1, 2, 2, 3]);
    while (h.running.size) await endAll(h);
    await run;
    expect(h.started.slice(2)).toEqual([2, 3, 4, 5, 6]);
  });

  test('resized: larger starts more at once, smaller starts none until fewer than N are in flight', async () => {
    const h = host(Array.from({ length: 20 }, (_, i) => step(i + 1)));
    const w = new StageWindow(2, h.host, realRuntime());
    const run = w.run();
    await tick();
    w.resize(5);
    await tick();
    expect(h.running.size).toBe(5);
    w.resize(2);
    await tick();
    h.running.get(1)!(true);
    await tick();
    expect(h.running.size).toBe(4);
    h.running.get(2)!(true);
    h.running.get(3)!(true);
    await tick();
    expect(h.running.size).toBe(2);
    h.running.get(4)!(true);
    await tick();
    expect(h.running.size).toBe(2);
    while (h.running.size) await endAll(h);
    await run;
    expect(h.started).toHaveLength(20);
  });

  test('stopping: ends once none is in flight, leaving the rest; steps caught mid-state still go on unless a signal came', async () => {
    const h = host([step(1, 'pre check'), step(2, 'pre check', true), step(3), step(4)]);
    h.gate.newSubclouds = false;
    h.gate.stopping = true;
    const w = new StageWindow(4, h.host, realRuntime());
    const run = w.run();
    await tick();
    // s1 was in flight when the last process stopped: it runs; s2 (put back by a retry) is new.
    expect(h.started).toEqual([1]);
    await endAll(h);
    await run;
    expect(h.started).toEqual([1]);
  });

  // Issue 14, break 5: a failing read or run in the window's pump was an unhandled rejection (a
  // stack trace) and the stage never settled. Now it is handed to the owner, which stops the apply.
  test('a read that throws, or a run that rejects, goes to the owner: no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const failures: Error[] = [];
      const broken = {
        fetch: async () => {
          throw new Error('disk I/O error');
        },
        gate: () => ({ newSubclouds: true, operations: true, stopping: false }),
        run: async () => true,
        failed: (e: Error) => failures.push(e),
      };
      void new StageWindow(2, broken, realRuntime()).run();
      await tick();
      expect(failures.map((e) => e.message)).toEqual(['disk I/O error']);

      const rejected: Error[] = [];
      let served = false;
      const w = new StageWindow(2, {
        fetch: async () => (served ? [] : ((served = true), [step(1)])),
        gate: () => ({ newSubclouds: true, operations: true, stopping: false }),
        run: () => Promise.reject(new Error('database disk image is malformed')),
        failed: (e: Error) => rejected.push(e),
      }, realRuntime());
      await w.run();
      expect(rejected.map((e) => e.message)).toEqual(['database disk image is malformed']);
      await tick();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

// A step is in the window once (the several-hosts issue: a rescan's second read of a step adopted
// in a takeover, or deferred, started it again from a stale state; sim seeds in test/sim).
describe('StageWindow: a step is in it once', () => {
  /** A host that also records the state each run was asked in. */
  function recording(steps: CursorStep[]) {
    const h = host(steps);
    const asked: string[] = [];
    const run = h.host.run;
    return { h, asked, host: { ...h.host, run: (s: CursorStep) => (asked.push(`${s.id}:${s.state}`), run(s)) } };
  }

  test('read again while it runs (added, or read by a rescan): it does not run a second time', async () => {
    const { h, asked, host: hh } = recording([step(1), step(2)]);
    const w = new StageWindow(2, hh, realRuntime());
    const run = w.run();
    await tick();
    expect(h.started).toEqual([1, 2]);
    w.add(step(1, 'pre check'));
    w.rescan();
    await tick();
    while (h.running.size) await endAll(h);
    await run;
    expect(asked).toEqual(['1:initial', '2:initial']);
  });

  test('added while an older read of it waits in the queue: it runs once, as added, and the queued read does nothing', async () => {
    const { h, asked, host: hh } = recording([step(1), step(2), step(3)]);
    const w = new StageWindow(1, hh, realRuntime());
    const run = w.run();
    await tick();
    expect(h.started).toEqual([1]);
    w.add(step(3, 'applying'));
    while (h.running.size) await endAll(h);
    await run;
    expect(asked.filter((a) => a.startsWith('3:'))).toEqual(['3:applying']);
    expect(asked).toHaveLength(3);
  });
});

describe('StageWindow: subclouds waiting for their maintenance window', () => {
  /** Steps 1 and 2 wait (for `inMs`) while `closed`; the others may start. */
  function withHold(n: number, inMs: number) {
    const h = host(Array.from({ length: n }, (_, i) => step(i + 1)));
    const state = { closed: true, asked: 0 };
    const hold = (s: CursorStep) => {
      state.asked++;
      return state.closed && s.id <= 2 ? inMs : null;
    };
    return { h, state, win: new StageWindow(2, { ...h.host, hold }, realRuntime()) };
  }

  test('they give up their places: the others start in their slots; they start once asked again after the window opened; the stage waits for them', async () => {
    const { h, state, win } = withHold(5, 3_600_000);
    let done = false;
    const run = win.run().then(() => (done = true));
    await tick();
    expect(h.started).toEqual([3, 4]);
    while (h.running.size) await endAll(h);
    expect(h.started).toEqual([3, 4, 5]);
    expect(done).toBe(false);
    // An hour away: the timer is not due, so they are not asked again unless told the windows changed.
    state.closed = false;
    win.recheckAside();
    win.pump();
    await tick();
    expect(h.started).toEqual([3, 4, 5, 1, 2]);
    expect(h.peak()).toBeLessThanOrEqual(2);
    while (h.running.size) await endAll(h);
    await run;
    expect(done).toBe(true);
  });

  test('a timer brings them back when their window opens, without a pump from outside', async () => {
    const { h, state, win } = withHold(3, 30);
    const run = win.run();
    await tick();
    expect(h.started).toEqual([3]);
    await endAll(h);
    state.closed = false;
    await waitFor(() => h.started.length === 3, 30_000, 5);
    expect(h.started).toEqual([3, 1, 2]);
    while (h.running.size) await endAll(h);
    await run;
  });

  test('the steps read stay bounded however many wait: the cursor stops a few thousand past the window', async () => {
    const steps = Array.from({ length: 20_000 }, (_, i) => step(i + 1));
    let read = 0;
    const h = host(steps);
    const fetch = h.host.fetch;
    const win = new StageWindow(2, { ...h.host, fetch: async (n: number) => { const out = await fetch(n); read += out.length; return out; }, hold: () => 3_600_000 }, realRuntime());
    const run = win.run();
    // Until every step read is set aside and none is with the limiter: the window has nothing left to do.
    const inside = win as unknown as { aside: { size: number }; outstanding: number };
    for (let i = 0; i < 100_000 && !(read > 0 && inside.aside.size === read && inside.outstanding === 0); i++) await tick();
    expect(inside.aside.size).toBe(read);
    expect(h.started).toEqual([]);
    expect(read).toBeGreaterThan(4096);
    expect(read).toBeLessThan(5000);
    h.gate.stopping = true;
    win.pump();
    await run;
  });

  test('a stop lets them go: the stage ends without them, and no timer is left', async () => {
    const { h, win } = withHold(3, 3_600_000);
    const run = win.run();
    await tick();
    await endAll(h);
    h.gate.stopping = true;
    h.gate.newSubclouds = false;
    win.pump();
    await run;
    expect(h.started).toEqual([3]);
    // The timer waiting for their window is cleared (it would keep the process alive for an hour).
    expect((win as unknown as { aside: { timer: unknown } }).aside.timer).toBeNull();
  });
});
