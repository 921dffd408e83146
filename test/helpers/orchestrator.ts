/**
 * Unit-test helpers for the Orchestrator: a temporary dcm file with a strategy set to `applying`,
 * a fake Driver the test drives by hand (or that answers by itself), and a recording progress sink.
 */
import { groupAdd } from '../../src/commands/groups.js';
import { strategyCreate } from '../../src/commands/strategy.js';
import { subcloudAdd } from '../../src/commands/subclouds.js';
import type { Driver, OperationRequest, OperationResult } from '../../src/drivers/driver.js';
import { statesOf, type StrategyType } from '../../src/domain/types.js';
import { Orchestrator, type OrchestratorOptions } from '../../src/orchestrator/orchestrator.js';
import type { ProgressSink, Summary, TransitionEvent } from '../../src/orchestrator/progress.js';
import { orchestratorRuntime, type CommitHooks, type CostCounters } from '../../src/orchestrator/runtime.js';
import { realRuntime } from '../../src/platform/runtime.js';
import { openDb, type Db } from '../../src/store/open.js';
import { casStrategyState, getStrategy } from '../../src/store/strategy.js';
import { tempDir } from './cli.js';

/** A global clock of events, so that tests can say "this happened before that". */
let tick = 0;
export const nextTick = (): number => ++tick;

export interface Call {
  req: OperationRequest;
  seq: number;
  /** Set when the driver answered. */
  endSeq?: number;
  answer: (r: OperationResult) => void;
  reject: (e: Error) => void;
}

export type Policy = (req: OperationRequest) => { result: OperationResult; afterMs?: number } | 'hold';

/**
 * A Driver that records every call. A call the policy holds waits for the test to answer it;
 * every other call is answered by the policy (after `afterMs`, default: on the next turn).
 * It checks, like a subcloud would, that no two operations run on one subcloud at once.
 */
export class FakeDriver implements Driver {
  readonly calls: Call[] = [];
  readonly running = new Map<string, Call>();
  readonly violations: string[] = [];
  peak = 0;
  closed = false;

  constructor(private readonly policy: Policy = () => ({ result: { kind: 'next' } })) {}

  run(req: OperationRequest): Promise<OperationResult> {
    for (const v of Object.values(req)) {
      if (v instanceof Map) this.violations.push(`the driver was handed a Map for ${req.cloud}`);
    }
    const busy = this.running.get(req.cloud);
    if (busy) this.violations.push(`${req.cloud}: ${req.state} started while ${busy.req.state} runs`);
    return new Promise<OperationResult>((resolve, reject) => {
      const call: Call = {
        req,
        seq: nextTick(),
        answer: (r) => {
          if (call.endSeq !== undefined) return;
          call.endSeq = nextTick();
          if (this.running.get(req.cloud) === call) this.running.delete(req.cloud);
          resolve(r);
        },
        reject: (e) => {
          if (call.endSeq !== undefined) return;
          call.endSeq = nextTick();
          if (this.running.get(req.cloud) === call) this.running.delete(req.cloud);
          reject(e);
        },
      };
      this.calls.push(call);
      this.running.set(req.cloud, call);
      this.peak = Math.max(this.peak, new Set([...this.running.keys()]).size);
      const p = this.policy(req);
      if (p === 'hold') return;
      const done = () => call.answer(p.result);
      if (p.afterMs) setTimeout(done, p.afterMs);
      else setImmediate(done);
    });
  }

  /** The call now waiting for `cloud`, if any. */
  waiting(cloud: string): Call | undefined {
    const c = this.running.get(cloud);
    return c && c.endSeq === undefined ? c : undefined;
  }

  clouds(): string[] {
    return [...new Set(this.calls.map((c) => c.req.cloud))];
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

export class RecordingProgress implements ProgressSink {
  readonly events: (TransitionEvent & { seq: number })[] = [];
  readonly notes: string[] = [];
  /** Progress lines committed as details, `cloud: line`. */
  readonly progressLines: string[] = [];
  summaries: Summary[] = [];
  details(cloud: string, text: string): void {
    this.progressLines.push(`${cloud}: ${text}`);
  }
  transition(e: TransitionEvent): void {
    this.events.push({ ...e, seq: nextTick() });
  }
  warn(message: string): void {
    this.notes.push(message);
  }

  note(message: string): void {
    this.notes.push(message);
  }
  summary(s: Summary): void {
    this.summaries.push(s);
  }
}

export interface FixtureSpec {
  type?: StrategyType;
  /** Subclouds of the Default group. */
  clouds?: string[];
  /** Extra groups, in id order, each one stage. */
  groups?: { name: string; window: number; clouds: string[] }[];
  window?: number;
  stopOnFailure?: boolean;
  stateTimeout?: string;
}

export interface Fixture {
  file: string;
  db: Db;
  states: string[];
  options: OrchestratorOptions;
  make: (driver: Driver, progress?: RecordingProgress, overrides?: Partial<OrchestratorOptions> & { counters?: CostCounters; hooks?: CommitHooks }) => Orchestrator;
  cleanup: () => void;
}

/** A dcm file with subclouds and a strategy already `applying`, and a way to build orchestrators. */
export async function fixture(spec: FixtureSpec): Promise<Fixture> {
  const t = tempDir('dcm-orch-');
  const ctx = { dbPath: t.db };
  const type = spec.type ?? 'kubernetes';
  if (spec.clouds?.length) await subcloudAdd(ctx, spec.clouds, {});
  for (const g of spec.groups ?? []) {
    await groupAdd(ctx, { name: g.name, maxParallelSubclouds: g.window });
    await subcloudAdd(ctx, g.clouds, { group: g.name });
  }
  await strategyCreate(ctx, {
    type,
    maxParallelSubclouds: spec.window,
    stopOnFailure: spec.stopOnFailure,
    driverOptions: { simLatency: '0', stateTimeout: spec.stateTimeout },
  });
  const db = (await openDb(t.db, { create: false }))!;
  await casStrategyState(db, ['initial'], 'applying');
  const s = (await getStrategy(db))!;
  const states = statesOf(type);
  const options: OrchestratorOptions = {
    type,
    states,
    stopOnFailure: s.stop_on_failure,
    campaign: s.created_at,
    extra: s.extra,
    stateTimeoutMs: Number(s.extra.state_timeout_ms),
    pollMs: 20,
  };
  return {
    file: t.db,
    db,
    states,
    options,
    make: (driver, progress = new RecordingProgress(), { counters, hooks, ...overrides } = {}) =>
      new Orchestrator(orchestratorRuntime(realRuntime(), db, driver, hooks ?? null, counters ?? null), progress, { ...options, ...overrides }),
    cleanup: () => {
      if (db.open) db.close();
      t.cleanup();
    },
  };
}

/** Let queued reports be decided and committed: a few turns of the event loop. */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
}

/** Answer every operation of `cloud` with `next` until the cloud has nothing more to run. */
export async function runToEnd(driver: FakeDriver, cloud: string, limit = 20): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await settle();
    const c = driver.waiting(cloud);
    if (!c) return;
    c.answer({ kind: 'next' });
  }
  throw new Error(`${cloud} did not end after ${limit} operations`);
}

export async function stepStates(db: Db): Promise<Record<string, string>> {
  const rows = await db
    .prepare('SELECT sc.name AS cloud, st.state FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id')
    .all() as { cloud: string; state: string }[];
  return Object.fromEntries(rows.map((r) => [r.cloud, r.state]));
}

export async function stepDetails(db: Db): Promise<Record<string, string>> {
  const rows = await db
    .prepare('SELECT sc.name AS cloud, st.details FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id')
    .all() as { cloud: string; details: string }[];
  return Object.fromEntries(rows.map((r) => [r.cloud, r.details]));
}

export async function historyRows(db: Db, cloud?: string): Promise<{ cloud: string; state: string; attempt: number; outcome: string; details: string }[]> {
  const base = `SELECT sc.name AS cloud, h.state, h.attempt, h.outcome, h.details FROM step_history h
    JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id`;
  return (cloud ? await db.prepare(`${base} WHERE sc.name = $1 ORDER BY h.id`).all(cloud) : await db.prepare(`${base} ORDER BY h.id`).all()) as {
    cloud: string;
    state: string;
    attempt: number;
    outcome: string;
    details: string;
  }[];
}
