/**
 * The Orchestrator with a fake Driver the test answers by hand: sliding window, stage barrier,
 * failures, stop on failure, timeouts, abort, Ctrl-C drain, resume. The real sim driver is
 * exercised end to end in test/e2e/apply*.test.ts.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import type { Driver, OperationRequest, OperationResult } from '../../src/drivers/driver.js';
import { strategyState } from '../../src/store/strategy.js';
import {
  FakeDriver,
  fixture,
  historyRows,
  RecordingProgress,
  runToEnd,
  settle,
  stepDetails,
  stepStates,
  type Fixture,
} from '../helpers/orchestrator.js';
import { names } from '../helpers/history.js';

let f: Fixture | null = null;
let drivers: FakeDriver[] = [];

function track(d: FakeDriver): FakeDriver {
  drivers.push(d);
  return d;
}

afterEach(() => {
  // At most one operation per subcloud at any moment, and the registry never handed out.
  for (const d of drivers) expect(d.violations).toEqual([]);
  drivers = [];
  f?.cleanup();
  f = null;
});

/** Each (cloud, state) ran exactly once, in order, and ended ok. */
async function expectEachStateOnce(fx: Fixture, clouds: string[]): Promise<void> {
  const rows = await historyRows(fx.db);
  for (const c of clouds) {
    const mine = rows.filter((r) => r.cloud === c);
    expect(mine.map((r) => `${r.state}#${r.attempt}:${r.outcome}`)).toEqual(fx.states.map((s) => `${s}#1:ok`));
  }
}

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

describe('Orchestrator: windows and stages', () => {
  test('sliding window of 2: s3 starts when s2 ends, s4 when s3 ends, while s1 still runs', async () => {
    f = await fixture({ clouds: names(4), window: 2 });
    const driver = track(new FakeDriver(() => 'hold'));
    const progress = new RecordingProgress();
    const done = f.make(driver, progress).run();

    await settle();
    expect(driver.clouds()).toEqual(['s1', 's2']);
    const s1first = driver.waiting('s1')!;
    expect(s1first.req.state).toBe(f.states[0]);

    await runToEnd(driver, 's2');
    await settle();
    expect(driver.clouds()).toEqual(['s1', 's2', 's3']);
    // s3 started right after s2's end was committed, and nothing else came in between.
    const s2end = progress.events.find((e) => e.cloud === 's2' && e.to === 'complete')!;
    const s3start = progress.events.find((e) => e.cloud === 's3')!;
    expect(s3start.from).toBe('initial');
    expect(progress.events.filter((e) => e.seq > s2end.seq && e.seq < s3start.seq)).toEqual([]);
    expect(driver.waiting('s1')).toBe(s1first);

    await runToEnd(driver, 's3');
    await settle();
    expect(driver.clouds()).toEqual(['s1', 's2', 's3', 's4']);
    const s3end = progress.events.find((e) => e.cloud === 's3' && e.to === 'complete')!;
    const s4start = progress.events.find((e) => e.cloud === 's4')!;
    expect(s4start.seq).toBeGreaterThan(s3end.seq);
    expect(progress.events.filter((e) => e.seq > s3end.seq && e.seq < s4start.seq)).toEqual([]);

    await runToEnd(driver, 's4');
    // s1 is still in its first operation: the window slid past it twice.
    expect(driver.waiting('s1')).toBe(s1first);
    expect(await stepStates(f.db)).toMatchObject({ s1: f.states[0], s2: 'complete', s3: 'complete', s4: 'complete' });

    await runToEnd(driver, 's1');
    expect(await done).toBe(0);
    expect(await strategyState(f.db)).toBe('complete');
    expect(driver.peak).toBe(2);
    await expectEachStateOnce(f, names(4));
    expect(progress.summaries[0]).toMatchObject({ state: 'complete', peakInFlight: 2, maxWindow: 2 });
  });

  // Issue 51: a refill waited for its subcloud's end to be committed, then for a commit of its own
  // (on a server, round trips each). The slot is lent in the commit that ends the subcloud: the
  // next one's first start is in that same commit, and the window is never exceeded in the store.
  test('the subcloud that takes a freed slot starts in the commit that ends the one before it', async () => {
    f = await fixture({ clouds: names(3), window: 1 });
    const driver = track(new FakeDriver(() => 'hold'));
    const progress = new RecordingProgress();
    // Each commit's transitions are said after it: the events from one commit's mark to the next's.
    const marks: number[] = [];
    const hooks = { beforeCommit: () => {}, inCommit: () => {}, afterCommit: () => void marks.push(progress.events.length) };
    const done = f.make(driver, progress, { hooks }).run();
    const commitOf = (cloud: string, to: string) => {
      const at = progress.events.findIndex((e) => e.cloud === cloud && e.to === to);
      return marks.filter((m) => m <= at).length;
    };
    for (const [cloud, next] of [['s1', 's2'], ['s2', 's3']]) {
      // Every state of `cloud` but its last: the window of 1 holds `next` back.
      for (let i = 0; i < f.states.length - 1; i++) {
        await settle();
        driver.waiting(cloud)!.answer({ kind: 'next' });
      }
      await settle();
      expect(driver.clouds()).not.toContain(next);
      driver.waiting(cloud)!.answer({ kind: 'next' });
      await settle();
      expect(driver.waiting(next)?.req.state).toBe(f.states[0]);
      expect(commitOf(next, f.states[0])).toBe(commitOf(cloud, 'complete'));
    }
    await runToEnd(driver, 's3');
    expect(await done).toBe(0);
    expect(driver.peak).toBe(1);
    expect(progress.summaries[0]).toMatchObject({ peakInFlight: 1, maxWindow: 1 });
    await expectEachStateOnce(f, names(3));
  });

  test('stage barrier: no stage-2 operation starts before every stage-1 step ended', async () => {
    f = await fixture({
      groups: [
        { name: 'canary', window: 2, clouds: names(5, 'a') },
        { name: 'rest', window: 3, clouds: names(7, 'b') },
      ],
    });
    const driver = track(new FakeDriver(() => ({ result: { kind: 'next' }, afterMs: random(0, 4) })));
    const progress = new RecordingProgress();
    expect(await f.make(driver, progress).run()).toBe(0);

    const stage1 = driver.calls.filter((c) => c.req.cloud.startsWith('a'));
    const stage2 = driver.calls.filter((c) => c.req.cloud.startsWith('b'));
    const lastEnd1 = Math.max(...stage1.map((c) => c.endSeq!));
    const lastStepEnd1 = Math.max(...progress.events.filter((e) => e.cloud.startsWith('a') && e.to === 'complete').map((e) => e.seq));
    const firstStart2 = Math.min(...stage2.map((c) => c.seq));
    expect(firstStart2).toBeGreaterThan(lastEnd1);
    expect(firstStart2).toBeGreaterThan(lastStepEnd1);
    expect(progress.summaries[0]).toMatchObject({ peakInFlight: 3, maxWindow: 3 });
    await expectEachStateOnce(f, [...names(5, 'a'), ...names(7, 'b')]);
  });

  test('500 subclouds, window 100, answers in 0..3ms: bounded, the window is used, every state once', async () => {
    f = await fixture({ clouds: names(500), window: 100 });
    const driver = track(new FakeDriver(() => ({ result: { kind: 'next' }, afterMs: random(0, 3) })));
    const progress = new RecordingProgress();
    expect(await f.make(driver, progress).run()).toBe(0);
    expect(driver.peak).toBe(100);
    expect(progress.summaries[0]).toMatchObject({ state: 'complete', peakInFlight: 100, maxWindow: 100 });
    expect(driver.calls).toHaveLength(500 * f.states.length);
    await expectEachStateOnce(f, names(500));
    const sync = await f.db.prepare("SELECT count(*) FROM subcloud WHERE kubernetes_sync = 'in-sync'").pluck().get();
    expect(sync).toBe(500);
  });

  test('a driver may skip forward: next = complete ends the step', async () => {
    f = await fixture({ clouds: ['s1', 's2'], window: 2 });
    const driver = track(
      new FakeDriver((req) => ({ result: req.cloud === 's1' ? { kind: 'next', next: 'complete', details: 'nothing to do' } : { kind: 'next' } })),
    );
    expect(await f.make(driver).run()).toBe(0);
    expect(await stepStates(f.db)).toEqual({ s1: 'complete', s2: 'complete' });
    expect(await historyRows(f.db, 's1')).toEqual([
      { cloud: 's1', state: f.states[0], attempt: 1, outcome: 'ok', details: 'nothing to do' },
    ]);
  });
});

describe('Orchestrator: failures', () => {
  test.each([
    ['back to an earlier state', 0],
    ['to the state it is in', 1],
    ['to a state the type does not have', -1],
  ])('a driver answer that goes %s fails the step instead of running a state twice', async (_what, target) => {
    f = await fixture({ clouds: ['s1'] });
    const states = f.states;
    const bad = target >= 0 ? states[target] : 'no such state';
    const driver = track(
      new FakeDriver((req) => ({ result: req.state === states[1] ? { kind: 'next', next: bad } : { kind: 'next' } })),
    );
    expect(await f.make(driver).run()).toBe(1);
    expect((await stepDetails(f.db)).s1).toBe(`${states[1]}: the driver reported an invalid next state '${bad}'`);
    expect(driver.calls.map((c) => c.req.state)).toEqual(states.slice(0, 2));
  });

  test('without stop on failure: the failed step says <state>: <reason>, the rest goes on, strategy failed', async () => {
    f = await fixture({ clouds: names(5), window: 2 });
    const states = f.states;
    const driver = track(
      new FakeDriver((req) => {
        if (req.cloud === 's2' && req.state === states[1]) return { result: { kind: 'failed', reason: 'boom' } };
        return { result: { kind: 'next' }, afterMs: random(0, 2) };
      }),
    );
    const progress = new RecordingProgress();
    expect(await f.make(driver, progress).run()).toBe(1);
    expect(await stepStates(f.db)).toEqual({ s1: 'complete', s2: 'failed', s3: 'complete', s4: 'complete', s5: 'complete' });
    expect((await stepDetails(f.db)).s2).toBe(`${states[1]}: boom`);
    expect(await strategyState(f.db)).toBe('failed');
    expect((await historyRows(f.db, 's2')).map((r) => [r.state, r.outcome, r.details])).toEqual([
      [states[0], 'ok', ''],
      [states[1], 'failed', 'boom'],
    ]);
    expect(await f.db.prepare("SELECT kubernetes_sync FROM subcloud WHERE name = 's2'").pluck().get()).toBe('out-of-sync');
    expect(progress.summaries[0]).toMatchObject({ state: 'failed', counts: { complete: 4, failed: 1 } });
  });

  test('a driver that throws fails the step with the error message', async () => {
    f = await fixture({ clouds: ['s1'] });
    const driver = track(new FakeDriver(() => 'hold'));
    const done = f.make(driver).run();
    await settle();
    driver.waiting('s1')!.reject(new Error('connection refused'));
    expect(await done).toBe(1);
    expect((await stepDetails(f.db)).s1).toBe(`${f.states[0]}: connection refused`);
  });

  test('a driver that throws synchronously fails that step only; the others go on', async () => {
    f = await fixture({ clouds: ['s1', 's2'] });
    class Throwing extends FakeDriver {
      override run(req: Parameters<FakeDriver['run']>[0]) {
        if (req.cloud === 's1') throw new Error('bad request');
        return super.run(req);
      }
    }
    const driver = track(new Throwing());
    expect(await f.make(driver).run()).toBe(1);
    expect((await stepDetails(f.db)).s1).toBe(`${f.states[0]}: bad request`);
    expect(await stepStates(f.db)).toEqual({ s1: 'failed', s2: 'complete' });
  });

  test('the fence: once the lock is lost, the next commit writes nothing and the run ends with that error', async () => {
    f = await fixture({ clouds: ['s1', 's2'] });
    const driver = track(new FakeDriver(() => 'hold'));
    let lost = false;
    const done = f.make(driver, new RecordingProgress(), {
      fence: async () => {
        if (lost) throw new Error('lost the apply lock to pid 1 on host elsewhere');
      },
    }).run();
    await settle();
    const before = JSON.stringify([await f.db.prepare('SELECT * FROM strategy_step').all(), await f.db.prepare('SELECT * FROM step_history').all()]);
    lost = true;
    driver.waiting('s1')!.answer({ kind: 'next' });
    await expect(done).rejects.toThrow('lost the apply lock to pid 1 on host elsewhere');
    expect(JSON.stringify([await f.db.prepare('SELECT * FROM strategy_step').all(), await f.db.prepare('SELECT * FROM step_history').all()])).toBe(before);
  });

  test('stop on failure: no new subcloud after the first failure, in-flight ones run to their end, the rest stay initial', async () => {
    f = await fixture({ clouds: names(5), window: 2, stopOnFailure: true });
    const states = f.states;
    const driver = track(
      new FakeDriver((req) => {
        if (req.cloud === 's2' && req.state === states[0]) return { result: { kind: 'failed', reason: 'no space left' } };
        return 'hold';
      }),
    );
    const progress = new RecordingProgress();
    const done = f.make(driver, progress).run();
    await settle(10);
    expect(await stepStates(f.db)).toMatchObject({ s1: states[0], s2: 'failed', s3: 'initial' });
    expect(driver.clouds()).toEqual(['s1', 's2']);
    // s1 was in flight: it runs to its end.
    await runToEnd(driver, 's1');
    expect(await done).toBe(1);
    expect(driver.clouds()).toEqual(['s1', 's2']);
    expect(await stepStates(f.db)).toEqual({ s1: 'complete', s2: 'failed', s3: 'initial', s4: 'initial', s5: 'initial' });
    expect((await stepDetails(f.db)).s2).toBe(`${states[0]}: no space left`);
    expect(await strategyState(f.db)).toBe('failed');
    expect(progress.notes.join('\n')).toMatch(/s2 failed: stop on failure/);
  });

  test('stop on failure holds back a start queued in the same turn as the failure', async () => {
    // Window 1: s1 fails, and its slot would go to s2 in the very flush that commits the failure.
    f = await fixture({ clouds: names(3), window: 1, stopOnFailure: true });
    const driver = track(new FakeDriver(() => ({ result: { kind: 'failed', reason: 'bad' } })));
    expect(await f.make(driver).run()).toBe(1);
    expect(driver.clouds()).toEqual(['s1']);
    expect(await stepStates(f.db)).toEqual({ s1: 'failed', s2: 'initial', s3: 'initial' });
  });

  test('per-state timeout: the step fails "<state>: timed out after 30ms", history says timeout, a late answer changes nothing', async () => {
    f = await fixture({ clouds: ['s1', 's2'], window: 2, stateTimeout: '30ms' });
    const states = f.states;
    const driver = track(new FakeDriver((req) => (req.cloud === 's1' ? 'hold' : { result: { kind: 'next' } })));
    const orch = f.make(driver);
    expect(await orch.run()).toBe(1);
    expect(await stepStates(f.db)).toEqual({ s1: 'failed', s2: 'complete' });
    expect((await stepDetails(f.db)).s1).toBe(`${states[0]}: timed out after 30ms`);
    expect(await historyRows(f.db, 's1')).toEqual([
      { cloud: 's1', state: states[0], attempt: 1, outcome: 'timeout', details: 'timed out after 30ms' },
    ]);
    const late = driver.waiting('s1')!;
    expect(late.req.signal.aborted).toBe(true);
    late.answer({ kind: 'next' });
    await settle();
    expect(await stepStates(f.db)).toEqual({ s1: 'failed', s2: 'complete' });
    expect(driver.calls.filter((c) => c.req.cloud === 's1')).toHaveLength(1);
  });
});

describe('Orchestrator: timeouts', () => {
  test('a signal first asked for after the timeout is already aborted', async () => {
    f = await fixture({ clouds: ['s1'], stateTimeout: '20ms' });
    const reqs: OperationRequest[] = [];
    const lazy: Driver = {
      run: (req) => {
        reqs.push(req); // does not touch req.signal yet
        return new Promise<OperationResult>(() => {});
      },
      close: async () => {},
    };
    expect(await f.make(lazy).run()).toBe(1);
    expect(reqs).toHaveLength(1);
    expect(reqs[0].signal.aborted).toBe(true);
  });

  test('a timeout longer than setTimeout can hold (600h) neither fires at once nor overflows a timer', async () => {
    f = await fixture({ clouds: ['s1'], window: 1, stateTimeout: '600h' });
    const real = globalThis.setTimeout;
    const delays: number[] = [];
    globalThis.setTimeout = ((fn: () => void, ms?: number, ...rest: unknown[]) => {
      delays.push(ms ?? 0);
      return real(fn, ms, ...rest);
    }) as typeof setTimeout;
    try {
      const driver = track(new FakeDriver(() => ({ result: { kind: 'next' }, afterMs: 15 })));
      expect(await f.make(driver).run()).toBe(0);
    } finally {
      globalThis.setTimeout = real;
    }
    expect(await stepStates(f.db)).toEqual({ s1: 'complete' });
    // Longer than 2^31-1 ms, Node fires at once (TimeoutOverflowWarning).
    expect(delays.filter((d) => d > 2_147_483_647)).toEqual([]);
  });
});

describe('Orchestrator: a stale writer', () => {
  test('a step changed behind its back stops the run with an error, and leaves no timer behind', async () => {
    f = await fixture({ clouds: names(3), window: 3 });
    const driver = track(new FakeDriver(() => 'hold'));
    const real = { set: globalThis.setTimeout, clear: globalThis.clearTimeout };
    const live = new Set<unknown>();
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      const h = real.set(() => {
        live.delete(h);
        fn();
      }, ms);
      live.add(h);
      return h;
    }) as typeof setTimeout;
    globalThis.clearTimeout = ((h: NodeJS.Timeout) => {
      live.delete(h);
      real.clear(h);
    }) as typeof clearTimeout;
    try {
      const done = f.make(driver).run();
      await settle();
      // Someone else moved s2 on: the orchestrator's guarded update must not overwrite it.
      const other = new Database(f.file);
      other.prepare("UPDATE strategy_step SET state = 'aborted' WHERE subcloud_id = (SELECT id FROM subcloud WHERE name = 's2')").run();
      other.close();
      driver.waiting('s2')!.answer({ kind: 'next' });
      await expect(done).rejects.toThrow(/step of s2 is no longer in state/);
      expect(driver.waiting('s1')!.req.signal.aborted).toBe(true);
    } finally {
      globalThis.setTimeout = real.set;
      globalThis.clearTimeout = real.clear;
    }
    // A timer left armed (an operation's deadline: an hour by default) would keep the process alive.
    expect(live.size).toBe(0);
    expect(await stepStates(f.db)).toMatchObject({ s2: 'aborted' });
  });
});

describe('Orchestrator: abort, interrupt, resume', () => {
  test('abort requested from another connection: noticed, initial steps aborted, in-flight ones end, exit 3', async () => {
    f = await fixture({ clouds: names(6), window: 2 });
    const driver = track(new FakeDriver(() => 'hold'));
    const progress = new RecordingProgress();
    const done = f.make(driver, progress).run();
    await settle();
    expect(driver.clouds()).toEqual(['s1', 's2']);

    const other = new Database(f.file);
    other.prepare("UPDATE strategy SET state = 'abort requested' WHERE id = 1").run();
    other.close();
    const t0 = Date.now();
    while (!progress.notes.some((n) => n.startsWith('abort requested'))) {
      if (Date.now() - t0 > 1000) throw new Error('abort not noticed within 1 s');
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(await strategyState(f.db)).toBe('aborting');
    expect(await stepStates(f.db)).toMatchObject({ s3: 'aborted', s4: 'aborted', s5: 'aborted', s6: 'aborted' });

    await runToEnd(driver, 's2');
    await runToEnd(driver, 's1');
    expect(await done).toBe(3);
    expect(driver.clouds()).toEqual(['s1', 's2']);
    expect(await stepStates(f.db)).toEqual({ s1: 'complete', s2: 'complete', s3: 'aborted', s4: 'aborted', s5: 'aborted', s6: 'aborted' });
    expect(await strategyState(f.db)).toBe('aborted');
  });

  // The poll never runs in these two (an hour apart): the commit that would open s3 finds the stop
  // in the file itself. Before, a subcloud could start up to a poll after `pause` or `abort` returned.
  test('a pause in the file stops the next new subcloud at its commit, before any poll has seen it', async () => {
    f = await fixture({ clouds: names(4), window: 2 });
    const driver = track(new FakeDriver(() => 'hold'));
    const progress = new RecordingProgress();
    const orch = f.make(driver, progress, { pollMs: 3_600_000 });
    const done = orch.run();
    await settle();
    expect(driver.clouds()).toEqual(['s1', 's2']);
    const other = new Database(f.file);
    other.prepare("UPDATE strategy SET state = 'paused' WHERE id = 1").run();
    other.close();
    await runToEnd(driver, 's2');
    await settle();
    expect(driver.clouds()).toEqual(['s1', 's2']);
    expect(progress.notes.filter((n) => n.startsWith('paused: no new subcloud starts'))).toHaveLength(1);
    // s2's end was committed all the same (the batch went again without s3's start).
    expect(await stepStates(f.db)).toMatchObject({ s2: 'complete', s3: 'initial', s4: 'initial' });
    orch.interrupt('SIGINT');
    await runToEnd(driver, 's1');
    expect(await done).toBe(130);
    expect(driver.clouds()).toEqual(['s1', 's2']);
    expect(await strategyState(f.db)).toBe('paused');
  });

  test('an abort in the file stops the next new subcloud at its commit, before any poll has seen it', async () => {
    f = await fixture({ clouds: names(4), window: 2 });
    const driver = track(new FakeDriver(() => 'hold'));
    const progress = new RecordingProgress();
    const done = f.make(driver, progress, { pollMs: 3_600_000 }).run();
    await settle();
    const other = new Database(f.file);
    other.prepare("UPDATE strategy SET state = 'abort requested' WHERE id = 1").run();
    other.close();
    await runToEnd(driver, 's2');
    await settle();
    expect(progress.notes.filter((n) => n.startsWith('abort requested'))).toHaveLength(1);
    expect(await stepStates(f.db)).toMatchObject({ s2: 'complete', s3: 'aborted', s4: 'aborted' });
    await runToEnd(driver, 's1');
    expect(await done).toBe(3);
    expect(driver.clouds()).toEqual(['s1', 's2']);
    expect(await strategyState(f.db)).toBe('aborted');
  });

  test('first interrupt drains: in-flight operations end and are committed, nothing new starts, exit 130; a new run resumes', async () => {
    f = await fixture({ clouds: names(4), window: 2 });
    const states = f.states;
    const driver = track(new FakeDriver(() => 'hold'));
    const orch = f.make(driver);
    const done = orch.run();
    await settle();
    orch.interrupt('SIGINT');
    driver.waiting('s1')!.answer({ kind: 'next' });
    driver.waiting('s2')!.answer({ kind: 'next' });
    expect(await done).toBe(130);
    expect(driver.calls).toHaveLength(2);
    expect(await strategyState(f.db)).toBe('applying');
    expect(await stepStates(f.db)).toEqual({ s1: states[1], s2: states[1], s3: 'initial', s4: 'initial' });
    expect((await historyRows(f.db)).filter((r) => r.outcome === 'running')).toEqual([]);

    const again = track(new FakeDriver());
    expect(await f.make(again).run()).toBe(0);
    expect(again.calls.filter((c) => c.req.cloud === 's1').map((c) => c.req.state)).toEqual(states.slice(1));
    await expectEachStateOnce(f, names(4));
  });

  test('SIGTERM exits 143', async () => {
    f = await fixture({ clouds: names(2), window: 2 });
    const driver = track(new FakeDriver(() => 'hold'));
    const orch = f.make(driver);
    const done = orch.run();
    await settle();
    orch.interrupt('SIGTERM');
    driver.waiting('s1')!.answer({ kind: 'next' });
    driver.waiting('s2')!.answer({ kind: 'next' });
    expect(await done).toBe(143);
    expect(await strategyState(f.db)).toBe('applying');
  });

  test('a run adopted from a stopped orchestrator is aborted by a second interrupt, through the request the driver kept', async () => {
    f = await fixture({ clouds: names(2), window: 2 });
    const first = f.make(track(new FakeDriver(() => 'hold')));
    const gone = first.run().catch(() => 'stopped');
    await settle();
    // As if killed: it writes nothing more, and leaves both runs `running`.
    await first.stopWith(new Error('killed'));
    expect(await gone).toBe('stopped');
    expect((await historyRows(f.db)).map((r) => [r.cloud, r.outcome])).toEqual([
      ['s1', 'running'],
      ['s2', 'running'],
    ]);
    // Still going: waited for until the request it was adopted with is aborted.
    const kept: OperationRequest[] = [];
    const driver = new FakeDriver();
    const adopting: Driver = Object.assign(driver, {
      adopt: (_left: unknown, req: OperationRequest) => {
        kept.push(req);
        const result = new Promise<OperationResult>((resolve) => req.signal.addEventListener('abort', () => resolve({ kind: 'failed', reason: 'interrupted' })));
        return { kind: 'wait' as const, result };
      },
    });
    const orch = f.make(adopting);
    const done = orch.run();
    await settle();
    expect(kept.map((r) => [r.cloud, r.signal.aborted])).toEqual([
      ['s1', false],
      ['s2', false],
    ]);
    orch.interrupt('SIGINT');
    orch.interrupt('SIGINT');
    expect(await done).toBe(130);
    expect(kept.map((r) => [r.cloud, r.signal.aborted])).toEqual([
      ['s1', true],
      ['s2', true],
    ]);
  });

  test('a second interrupt stops waiting; a late answer changes nothing; the resume runs the interrupted states again as attempt 2', async () => {
    f = await fixture({ clouds: names(3), window: 2 });
    const states = f.states;
    const driver = track(new FakeDriver(() => 'hold'));
    const orch = f.make(driver);
    const done = orch.run();
    await settle();
    orch.interrupt('SIGINT');
    orch.interrupt('SIGINT');
    expect(await done).toBe(130);
    const before = await historyRows(f.db);
    expect(before.map((r) => [r.cloud, r.outcome])).toEqual([
      ['s1', 'interrupted'],
      ['s2', 'interrupted'],
    ]);
    expect(driver.waiting('s1')!.req.signal.aborted).toBe(true);
    // The stopped orchestrator must not act on an answer that comes after it returned.
    driver.waiting('s1')!.answer({ kind: 'next' });
    await settle();
    expect(await historyRows(f.db)).toEqual(before);
    expect(await stepStates(f.db)).toMatchObject({ s1: states[0], s2: states[0] });
    // The subclouds' side of s2's operation is still running: the new driver is another process.
    const again = track(new FakeDriver());
    const progress = new RecordingProgress();
    expect(await f.make(again, progress).run()).toBe(0);
    expect(again.calls.filter((c) => c.req.cloud === 's1').map((c) => [c.req.state, c.req.attempt])).toEqual([
      [states[0], 2],
      ...states.slice(1).map((s) => [s, 1]),
    ]);
    expect((await historyRows(f.db, 's1')).map((r) => `${r.state}#${r.attempt}:${r.outcome}`)).toEqual([
      `${states[0]}#1:interrupted`,
      `${states[0]}#2:ok`,
      ...states.slice(1).map((s) => `${s}#1:ok`),
    ]);
    expect(await stepStates(f.db)).toEqual({ s1: 'complete', s2: 'complete', s3: 'complete' });
  });

  test('a second interrupt still commits the answers already received, and starts nothing', async () => {
    f = await fixture({ clouds: names(3), window: 2 });
    const states = f.states;
    const driver = track(new FakeDriver(() => 'hold'));
    const orch = f.make(driver);
    const done = orch.run();
    await settle();
    orch.interrupt('SIGINT');
    driver.waiting('s1')!.answer({ kind: 'next' });
    await Promise.resolve();
    orch.interrupt('SIGINT'); // before the answer's flush ran
    expect(await done).toBe(130);
    expect(await stepStates(f.db)).toEqual({ s1: states[1], s2: states[0], s3: 'initial' });
    expect((await historyRows(f.db)).map((r) => [r.cloud, r.outcome])).toEqual([
      ['s1', 'ok'],
      ['s2', 'interrupted'],
    ]);
    expect(driver.calls).toHaveLength(2);
  });

  test('resume after a crash: a run left running is interrupted and runs again; completed states never run again', async () => {
    f = await fixture({ clouds: names(3), window: 2 });
    const states = f.states;
    // What a process killed in s1's second state leaves behind.
    await f.db.exec(`
      UPDATE strategy_step SET state = '${states[1]}', started_at = '2025-01-01 00:00:00.000001', attempt = 1
        WHERE subcloud_id = (SELECT id FROM subcloud WHERE name = 's1');
      INSERT INTO step_history (step_id, state, attempt, started_at, finished_at, outcome)
        SELECT st.id, '${states[0]}', 1, '2025-01-01 00:00:00.000001', '2025-01-01 00:00:00.000002', 'ok'
        FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE sc.name = 's1';
      INSERT INTO step_history (step_id, state, attempt, started_at, outcome)
        SELECT st.id, '${states[1]}', 1, '2025-01-01 00:00:00.000003', 'running'
        FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE sc.name = 's1';
    `);
    const driver = track(new FakeDriver());
    expect(await f.make(driver).run()).toBe(0);
    // The step caught mid-state goes first, from the state it was in.
    expect(driver.calls[0].req).toMatchObject({ cloud: 's1', state: states[1], attempt: 2 });
    expect(driver.calls.filter((c) => c.req.cloud === 's1').map((c) => c.req.state)).toEqual(states.slice(1));
    expect((await historyRows(f.db, 's1')).map((r) => `${r.state}#${r.attempt}:${r.outcome}`)).toEqual([
      `${states[0]}#1:ok`,
      `${states[1]}#1:interrupted`,
      `${states[1]}#2:ok`,
      ...states.slice(2).map((s) => `${s}#1:ok`),
    ]);
    expect(await stepStates(f.db)).toEqual({ s1: 'complete', s2: 'complete', s3: 'complete' });
  });
});
