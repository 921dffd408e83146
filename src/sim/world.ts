/**
 * One simulated rollout: a real store (a SQLite file, or a database of its own on a PostgreSQL
 * server: store.ts), the real `strategy apply` (commands/apply-service.ts, the same function the
 * command calls) in every simulated process, the real commands for the fleet and the operator,
 * simulated sites (sites.ts) reached through each host's launcher (launcher.ts), and simulated hosts
 * and processes on one virtual clock (loop.ts, hosts.ts), meeting the faults of a schedule
 * (schedule.ts, faults.ts). The judge (judge.ts) checks what must hold after every commit and at
 * the end; the operator (operator.ts) does what a person does about it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { STRATEGY_ENDED as ENDED, statesOf } from '../domain/types.js';
import { groupAdd } from '../commands/groups.js';
import { subcloudAdd } from '../commands/subclouds.js';
import { strategyCreate } from '../commands/strategy.js';
import { applyStrategy } from '../commands/apply-service.js';
import type { RunCtx } from '../commands/context.js';
import { loadPgBackend, openDb, type Db } from '../store/open.js';
import { getStrategy } from '../store/strategy.js';
import { sql } from '../store/statements.js';
import { claimRun, recordRunEnd, type LeftRunRow } from '../store/runs.js';
import type { ProgressSink } from '../orchestrator/progress.js';
import { Loop } from './loop.js';
import { firstPid, SimHost, type SimProcess } from './hosts.js';
import { planOf, Sites, type Violation } from './sites.js';
import { SimDriver, BACKSTOP_GRACE_MS } from './driver.js';
import type { RunBook, SimLauncher } from './launcher.js';
import { GatedDb } from './sim-db.js';
import { Judge, WindowBook, type RateChange } from './judge.js';
import { livenessBoundMs, quietAt, type Schedule } from './schedule.js';
import { simStore, type SimStore } from './store.js';
import { armFaults } from './faults.js';
import { Operator } from './operator.js';
import { keyedPrng } from './prng.js';

const TYPE = 'kubernetes' as const;
/** The pid the commands name for a run a site still has going (it has no process here: it is simulated). */
export const SITE_PID = 4_189_999;
/** How long an orchestrator may take to see a window changed: its poll (1 s here) and a margin. */
const WINDOW_GRACE_MS = 2_500;
/** Events a schedule may run: past this, something sets itself going again and again without time moving on. */
const MAX_EVENTS = 500_000;

export interface Outcome {
  violations: Violation[];
  trace: string[];
  /** How many times each fault and each recovery path was met. */
  hits: Record<string, number>;
  state: string;
  virtualMs: number;
  /** What dcm recorded (its events' kinds): the paths the schedule reached. */
  paths: string[];
  /** The schedule reached its quiet: its liveness was judged. */
  quiet: boolean;
}

/** A simulated `dcm strategy apply`. */
export interface Apply {
  proc: SimProcess;
  /** Several hosts: the worker's index (its host, unless that host was lost). */
  w: number;
  gen: number;
  done: boolean;
  /** Its connections: closed when it is killed (the server or the file lets its locks go). */
  dbs: Db[];
}

/** Run schedule `s` on a file, or, given `server` (a postgresql:// address), on a database of its own there. */
export async function runSchedule(s: Schedule, server?: string): Promise<Outcome> {
  if (server) await loadPgBackend();
  const store = await simStore(server, s.seed);
  try {
    return await new World(s, store).run();
  } finally {
    await store.dispose();
  }
}

export class World {
  readonly loop = new Loop();
  readonly nextPid = firstPid();
  readonly trace: string[] = [];
  readonly hits: Record<string, number> = {};
  readonly sites: Sites;
  readonly judge: Judge;
  readonly windows: WindowBook;
  readonly states = statesOf(TYPE, {});
  /** The worker hosts (several hosts: one each), then any spare host a lost one's worker moves to. */
  readonly hosts: SimHost[] = [];
  readonly applies: Apply[] = [];
  readonly launchers: SimLauncher[] = [];
  readonly ops: SimHost;
  readonly ctx: RunCtx;
  /** Another session holds the store's file until then (the busy fault): the operator's writes wait for it (operator.ts). */
  busyUntil = 0;
  readonly operator: Operator;
  db!: Db;
  private book: RunBook | null = null;
  gen = 0;
  /** Each `strategy retry` begins an epoch: stages are judged in order within one. */
  epoch = 0;
  /** The start rate over time: create's, and each `strategy update --start-rate` (judge.ts). */
  readonly rates: RateChange[] = [];
  ended = false;

  constructor(
    readonly s: Schedule,
    readonly store: SimStore,
  ) {
    const initial = new Map(s.stages.map((st, i) => [i + 1, st.window]));
    this.windows = new WindowBook(initial, WINDOW_GRACE_MS);
    this.sites = new Sites(this.loop, (site, state, attempt) => planOf(s, site, state, attempt), (stage) => this.windows.at(stage, this.loop.now), (l) => this.log(l), () => this.epoch, this.states[this.states.length - 1], s.rerunOnLostHost);
    this.judge = new Judge(this.sites, this.states);
    for (let h = 0; h < s.hosts; h++) this.hosts.push(new SimHost(`host-${h + 1}`, this));
    this.ops = new SimHost('ops', this);
    const shell = this.ops.spawn('operator');
    // Abort, retry and delete see a run left going as the sites do (they outlive the sim's processes).
    const runLives = (left: LeftRunRow) => (this.sites.find(left)?.endMs === null ? SITE_PID : null);
    // Ended with an exit code (the exec wrapper's status file): not one stopped by a signal.
    const runEnded = (left: LeftRunRow) => {
      const e = this.sites.find(left);
      return e !== undefined && e.endMs !== null && e.outcome !== 'killed';
    };
    this.ctx = { dbPath: store.address, quiet: true, confirm: async () => {}, runLives, runEnded, shared: s.hosts > 1, runtime: shell.runtime() };
    this.operator = new Operator(this);
  }

  log(line: string): void {
    if (process.env.DCM_SIM_LIVE) process.stderr.write(`${line}\n`);
    this.trace.push(`${(this.loop.now / 1000).toFixed(3)} ${line}`);
  }

  hit(kind: string, n = 1): void {
    if (n) this.hits[kind] = (this.hits[kind] ?? 0) + n;
  }

  /**
   * Something the world itself does in the background (an operator's look, a fault): a failure of
   * it is said in the trace and counted, never left to reject unheard.
   */
  background(what: string, work: () => unknown): void {
    Promise.resolve()
      .then(work)
      .catch((err: Error) => {
        this.hit('world-error');
        this.log(`world: ${what} failed: ${err.message}`);
      });
  }

  async run(): Promise<Outcome> {
    await this.build();
    this.log('fleet built');
    this.loop.settleExtra = this.store.answered;
    this.store.onTime?.({ pause: (ms) => new Promise<void>((r) => this.loop.after(ms, r)), now: () => this.loop.now });
    this.db = (await openDb(this.store.worldAddress, { create: false, write: true, clock: this.ops.clock }))!;
    // A file's reads never wait; a server's may, behind another session's LOCK TABLE: the world's
    // own wait (pg-turns.ts lets virtual time go on to the moment the lock is let go).
    await this.db.busyWait(this.store.server ? 600_000 : 0);
    if (this.s.hosts > 1) this.book = this.runBook();
    armFaults(this);
    if (this.s.hosts === 1) this.spawn(0);
    else for (let w = 0; w < this.s.hosts; w++) this.loop.after(w * 700, () => this.spawn(w));
    this.operator.start();
    const quiet = quietAt(this.s);
    const deadline = quiet + livenessBoundMs(this.s, this.states.length);
    // One event at a time, each once what the last one set going has settled, until the rollout
    // is over or the bound is reached.
    for (;;) {
      await this.loop.settle();
      if (this.finished() || this.loop.ran > MAX_EVENTS || !this.loop.step(deadline)) break;
    }
    const spun = this.loop.ran > MAX_EVENTS ? `${MAX_EVENTS} events run by ${Math.round(this.loop.now / 1000)} s of virtual time, and not ended` : null;
    const late = this.finished() ? null : spun ?? `not ended ${Math.round((this.loop.now - quiet) / 1000)} s after its faults were over (bound ${Math.round((deadline - quiet) / 1000)} s)`;
    await this.operator.tell();
    await this.judge.atEnd(this.db, late, this.rates);
    const state = (await getStrategy(this.db))?.state ?? 'none';
    const paths = ((await sql(this.db, 'SELECT DISTINCT event FROM strategy_event').pluck().all()) as string[]).sort();
    this.db.close();
    for (const a of this.applies) for (const d of a.dbs) if (d.open) d.close();
    if (process.env.DCM_SIM_EVENTS) process.stderr.write(`events ${this.loop.ran} virtual ${Math.round(this.loop.now / 1000)} s\n`);
    return { violations: this.sites.violations, trace: this.trace, hits: this.hits, state, virtualMs: this.loop.now, paths, quiet: this.loop.now >= quiet };
  }

  /** The rollout is over: the strategy ended, no apply runs, nothing goes at the sites, no retry is on its way. */
  private finished(): boolean {
    return this.ended && this.live().length === 0 && this.sites.stillRunning().length === 0 && this.operator.planned === 0;
  }

  /** The applies running now (not ended, not killed). */
  live(): Apply[] {
    return this.applies.filter((a) => !a.done && !a.proc.dead);
  }

  private async build(): Promise<void> {
    let n = 0;
    for (const [i, st] of this.s.stages.entries()) {
      const names = Array.from({ length: st.sites }, () => `site-${String(++n).padStart(3, '0')}`);
      await groupAdd(this.ctx, { name: `stage-${i + 1}`, maxParallelSubclouds: st.window });
      await subcloudAdd(this.ctx, names, { group: `stage-${i + 1}` });
    }
    // An exec strategy, as several hosts' rollouts are: its runs' ends reach the store from their
    // launcher, and the operator's resolve and retry name them. The config is the schedule's
    // timeout; the runs themselves are the simulated sites'.
    const config = path.join(this.store.scratch, 'sim-exec.json');
    const timeout = this.s.stateTimeoutMs === null ? 'none' : `${this.s.stateTimeoutMs / 1000}s`;
    fs.writeFileSync(config, JSON.stringify({ defaults: { timeout, ...(this.s.rerunOnLostHost ? { on_lost_host: 'rerun' } : {}) }, states: { '*': ['true'] } }));
    const r = this.s.startRate;
    const rate = r ? { startRate: `${r.perMin}/min`, ...(r.after !== null ? { ramp: String(r.factor), rampAfter: String(r.after) } : {}) } : {};
    await strategyCreate(this.ctx, { type: TYPE, driverOptions: { driver: 'exec', execConfig: config }, ...rate });
    if (r) this.rates.push({ atMs: 0, rate: r });
  }

  /** The world's own book of runs (several hosts): what each host's launcher writes to the store. */
  private runBook(): RunBook {
    return {
      claim: (key, host) => claimRun(this.db, key, host),
      ended: (key, host, code, signal) => recordRunEnd(this.db, key, host, code, signal),
      holds: async (token) => (await sql(this.db, 'SELECT 1 FROM apply_worker WHERE token = $1').get(token)) !== undefined,
    };
  }

  /** The host worker `w` runs on: its own, or, once that one is lost, a spare one. */
  hostOf(w: number): SimHost {
    if (this.s.hosts === 1) return this.hosts[0];
    const own = this.hosts[w];
    if (!own.lost) return own;
    let spare = this.hosts.find((h) => h.name === `spare-${w + 1}`);
    if (!spare) this.hosts.push((spare = new SimHost(`spare-${w + 1}`, this)));
    return spare;
  }

  /** A new `dcm strategy apply`: worker `w` on its host (several hosts), or the next generation on the one host. */
  spawn(w: number): void {
    if (this.ended) return;
    const host = this.hostOf(w);
    const gen = ++this.gen;
    const name = this.s.hosts === 1 ? `apply#${gen}` : `worker${w}#${gen}`;
    const proc = host.spawn(name);
    const a: Apply = { proc, w, gen, done: false, dbs: [] };
    this.applies.push(a);
    proc.onKill.push(() => {
      for (const d of a.dbs) if (d.open) d.close();
    });
    const rt = proc.runtime();
    const token = `t${gen}-${keyedPrng(this.s.seed, 'token', gen).int(0, 1e9).toString(36)}`;
    const several = this.s.hosts > 1;
    const gate = () => (host.cut && !proc.dead ? new Promise<void>((resolve) => this.operator.whenBack(host, resolve)) : proc.dead ? new Promise<void>(() => {}) : undefined);
    this.log(`${name} starts on ${host.name}`);
    void applyStrategy(
      {
        dbPath: this.store.address,
        runtime: rt,
        who: { user: 'sim', host: host.name, pid: proc.pid },
        quiet: true,
        progress: () => this.progress(a),
        driver: async () =>
          new SimDriver(proc, host, this.sites, { killAfterMs: this.s.stateTimeoutMs, graceMs: BACKSTOP_GRACE_MS, rerunAfterBound: this.s.rerunOnLostHost }, several ? this.book : null, several ? { token: () => token, ms: this.s.leaseMs } : null, (l) => this.log(l), (l) => this.launchers.push(l)),
        hooks: this.operator.commitHooks(a),
        pollMs: 1_000,
        drainMs: 60_000,
        token: () => token,
        workers: several,
        endsReachStore: () => several,
        open: async () => {
          const real = (await openDb(this.store.addressOf(host.name), { create: false, write: true, clock: rt.clock }))!;
          const db = new GatedDb(real, gate, !this.store.server);
          a.dbs.push(db);
          return db;
        },
      },
      TYPE,
      several ? { leaseMs: this.s.leaseMs } : {},
    ).then(
      (o) => this.exited(a, `exit ${o.exitCode}`),
      (err: Error) => this.exited(a, `error: ${err.message}`),
    );
  }

  /** An apply returned (a killed one never does). */
  private exited(a: Apply, how: string): void {
    if (a.proc.dead) return;
    // The transition writer's guard: this apply closes a run its own commit closed already, one it
    // took for lost (pg-database.ts committedAfterAll); no fault of the schedule explains that.
    if (/^error: history row \d+ of \S+ is not running$/.test(how)) this.sites.violation('own-writes', `${a.proc.name} stopped: ${how.slice('error: '.length)}`);
    a.done = true;
    a.proc.kill();
    this.log(`${a.proc.name} ends: ${how}`);
    this.background('the operator after an exit', () => this.operator.afterExit(a));
  }

  /** What an apply shows: its notes in the trace, and the recovery paths they name counted. */
  private progress(a: Apply): ProgressSink {
    return {
      transition: () => {},
      note: (text: string) => {
        this.log(`${a.proc.name}: ${text}`);
        if (/^took over/.test(text)) this.hit('takeover-note');
        if (/^resuming: \d+ operation/.test(text)) this.hit('interrupted-rerun');
        if (/^resuming: \d+ run\(s\) left/.test(text)) this.hit('adopted');
      },
      warn: (text: string) => this.log(`${a.proc.name}: ${text}`),
      summary: () => {},
    } as ProgressSink;
  }

  /** The strategy's state as the world reads it now. */
  async strategyState(): Promise<string> {
    return this.sawState((await getStrategy(this.db))?.state ?? 'none');
  }

  /** The strategy's state, as read after a commit or by the operator. */
  sawState(state: string): string {
    if (ENDED.includes(state)) this.ended = true;
    return state;
  }
}
