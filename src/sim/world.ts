/**
 * One simulated rollout: a real store (a SQLite file, or a database on a PostgreSQL server:
 * store.ts), the real orchestrator (src/orchestrator, with the real commands for the fleet and the
 * operator), simulated sites (sites.ts) and simulated dcm processes on a virtual clock (clock.ts),
 * meeting the faults of a schedule (schedule.ts). After every commit and at the end it checks what
 * must always hold: the sites' invariants (sites.ts), and the store's (judge.ts): no ended step
 * reopened, every step ended, the strategy ended, no run left going.
 */
import { statesOf, STRATEGY_ENDED as ENDED, TYPES, type StrategyType } from '../domain/types.js';
import { groupAdd } from '../commands/groups.js';
import { subcloudAdd } from '../commands/subclouds.js';
import { strategyCreate } from '../commands/strategy.js';
import { strategyPause, strategyResume, strategyRetry, strategyUpdate } from '../commands/control.js';
import { strategyAbort } from '../commands/abort.js';
import { loadPgBackend, openDb, type Db } from '../store/open.js';
import { casStrategyState, getStrategy } from '../store/strategy.js';
import { Orchestrator } from '../orchestrator/orchestrator.js';
import type { ProgressSink } from '../orchestrator/progress.js';
import { WorkerLease } from '../orchestrator/workers.js';
import { ApplyLock } from '../orchestrator/lock.js';
import { answered, installClock, ProcessTimers, type VirtualClock } from './clock.js';
import { planner, type Fault, type Schedule } from './schedule.js';
import { SimDriver, Sites, type RunBook, type Violation } from './sites.js';
import { claimRun, recordRunEnd, type LeftRunRow } from '../store/runs.js';
import { standInForServerClock } from '../store/workers.js';
import { simStore, type SimStore } from './store.js';
import { Judge } from './judge.js';

const TYPE: StrategyType = 'kubernetes';
/** The pid the commands name for a run a site still has going (it has none: it is simulated). */
const SITE_PID = 4_189_999;
/** A schedule that has not ended after this much virtual time has hung. */
const LIMIT_MS = 2 * 3600_000;

export interface Outcome {
  violations: Violation[];
  trace: string[];
  /** How many times each fault and each recovery path was exercised. */
  hits: Record<string, number>;
  state: string;
  virtualMs: number;
}

/** A simulated `dcm strategy apply`. */
interface Proc {
  name: string;
  gen: number;
  timers: ProcessTimers;
  db: Db;
  /** A server: the lease's own connection, as apply's (never behind the writers' lock). */
  beatDb: Db | null;
  driver: SimDriver;
  orch: Orchestrator;
  lease: WorkerLease | null;
  /** One host: the apply lock, as `apply` holds it (an abort from another shell asks its holder). */
  lock: ApplyLock | null;
  ended: boolean;
}

/** Thrown inside the process at its kill: what it was doing stops there. */
class Killed extends Error {}

/** Run schedule `s` on a file, or, given `server` (a postgresql:// address), on a database of its own there. */
export async function runSchedule(s: Schedule, server?: string): Promise<Outcome> {
  if (server) await loadPgBackend();
  const store = await simStore(server);
  const clock = installClock();
  // The leases' clock is the server's: on the simulator's, it is the virtual one too.
  standInForServerClock(() => Date.now());
  try {
    return await new World(s, clock, store).run();
  } finally {
    standInForServerClock(null);
    clock.uninstall();
    await store.dispose();
  }
}

class World {
  private readonly trace: string[] = [];
  private readonly hits: Record<string, number> = {};
  private readonly sites: Sites;
  private readonly judge: Judge;
  private readonly procs: Proc[] = [];
  private gen = 0;
  private pending = 0;
  private retried = false;
  private restarts = 0;
  private busyUntil = 0;
  private readonly ctx: { dbPath: string; quiet: boolean; confirm: () => Promise<void>; runLives: (left: LeftRunRow) => number | null };
  private db!: Db;

  constructor(
    private readonly s: Schedule,
    private readonly clock: VirtualClock,
    private readonly store: SimStore,
  ) {
    this.sites = new Sites(planner(s), (line) => this.log(line));
    this.judge = new Judge(this.sites);
    // Abort, retry and delete see a run left going as the sites do (they outlive the sim's processes).
    const runLives = (left: LeftRunRow) => (this.sites.find(left)?.endMs === null ? SITE_PID : null);
    this.ctx = { dbPath: store.address, quiet: true, confirm: async () => {}, runLives };
  }

  private log(line: string): void {
    if (process.env.DCM_SIM_LIVE) process.stderr.write(`${line}\n`);
    this.trace.push(`${((Date.now() - this.start) / 1000).toFixed(3)} ${line}`);
  }

  private hit(kind: string, n = 1): void {
    if (n) this.hits[kind] = (this.hits[kind] ?? 0) + n;
  }

  private readonly start = Date.now();

  /** The runs' starts and ends as their hosts write them, on the world's own connection. */
  private readonly book: RunBook = {
    claim: (key, host) => claimRun(this.db, key, host),
    ended: (key, host, code, signal) => recordRunEnd(this.db, key, host, code, signal),
  };

  async run(): Promise<Outcome> {
    await this.build();
    this.log('fleet built');
    this.db = (await openDb(this.store.worldAddress, { create: false, write: true }))!;
    await this.db.busyWait(0);
    for (const f of this.s.faults) this.arm(f);
    if (this.s.hosts === 1) await this.spawn(0);
    else for (let w = 0; w < this.s.hosts; w++) this.later(() => this.spawn(w), w * 700);
    while (this.busy() && Date.now() - this.start < LIMIT_MS) await this.step();
    // What is still out at the sites ends (or is left going: a violation below).
    const until = Date.now() + this.s.stateTimeoutMs * 2;
    for (setTimeout(() => {}, until - Date.now()); Date.now() < until; ) await this.step();
    await this.judge.atEnd(this.db, `${LIMIT_MS / 3600_000} h`);
    const state = (await getStrategy(this.db))?.state ?? 'none';
    this.db.close();
    for (const p of this.procs) for (const d of [p.db, p.beatDb]) if (d?.open) d.close();
    return { violations: this.sites.violations, trace: this.trace, hits: this.hits, state, virtualMs: Date.now() - this.start };
  }

  /** The next moment something is due; on a server, once every query asked has its answer (virtual time stands still meanwhile). */
  private async step(): Promise<void> {
    if (this.store.server) await answered();
    await this.clock.nextAsync();
  }

  /** Something may still happen: a process runs, or a start or a fault is due. */
  private busy(): boolean {
    return this.alive().length > 0 || this.pending > 0;
  }

  private later(fn: () => void, ms: number): void {
    this.pending++;
    setTimeout(() => {
      this.pending--;
      fn();
    }, ms);
  }

  private async build(): Promise<void> {
    let n = 0;
    for (const [i, st] of this.s.stages.entries()) {
      const names = Array.from({ length: st.sites }, () => `site-${String(++n).padStart(3, '0')}`);
      await groupAdd(this.ctx, { name: `stage-${i + 1}`, maxParallelSubclouds: st.window });
      await subcloudAdd(this.ctx, names, { group: `stage-${i + 1}` });
      this.sites.windows.set(i + 1, st.window);
    }
    await strategyCreate(this.ctx, { type: TYPE, driverOptions: { simLatency: '0', stateTimeout: `${this.s.stateTimeoutMs / 1000}s` } });
  }

  /** A new `apply`: worker `w` on its host (several hosts), or the next generation on the one host. */
  private async spawn(w: number): Promise<void> {
    const state = (await getStrategy(this.db))?.state ?? 'none';
    if (ENDED.includes(state)) return;
    const gen = ++this.gen;
    const host = this.s.hosts === 1 ? 'host-1' : `host-${w + 1}`;
    const name = this.s.hosts === 1 ? `apply#${gen}` : `worker${w}#${gen}`;
    const timers = new ProcessTimers();
    const db = (await openDb(this.ctx.dbPath, { create: false, write: true }))!;
    await db.busyWait(0);
    if (!this.store.server) await db.pragma('synchronous = OFF');
    // Several hosts: the sites tell the store how their runs end (as the exec launcher does), and a
    // worker that takes another host's over waits for those ends instead of running them again.
    const driver = new SimDriver(this.sites, timers, host, this.s.hosts > 1 ? this.book : null);
    const beatDb = this.store.server ? (await openDb(this.ctx.dbPath, { create: false, write: true }))! : null;
    await beatDb?.busyWait(0);
    const lease = this.s.hosts > 1 ? new WorkerLease(db, this.s.leaseMs, null, { host, pid: 4_190_000 + gen, timers, ...(beatDb ? { beatDb } : {}) }) : null;
    if (lease) lease.adoptsElsewhere = true;
    const start = async (tx: Db) => {
      if ((await getStrategy(tx))!.state === 'initial') await casStrategyState(tx, ['initial'], 'applying');
    };
    const lock = lease ? null : new ApplyLock(db, this.ctx.dbPath, timers);
    try {
      if (lease) {
        const taken = await lease.join(start);
        this.hit('takeover', taken.length);
        lease.record = async () => this.hit('takeover');
      } else if ((await lock!.acquire((tx) => start(tx))).tookOverFrom) this.hit('lock-takeover');
    } catch (err) {
      this.log(`${name} could not start: ${(err as Error).message}`);
      db.close();
      beatDb?.close();
      // One host, the operator's apply running (after a retry): it applies again as it ends, if need be.
      if (this.s.hosts === 1 && this.alive().length) return;
      // A busy store or a lock still held: the operator tries again a little later.
      if (this.restarts++ < 50) this.later(() => this.spawn(w), 5_000);
      return;
    }
    const s = (await getStrategy(db))!;
    const proc: Proc = { name, gen, timers, db, beatDb, driver, lease, lock, ended: false, orch: null as unknown as Orchestrator };
    const killAt = this.s.faults.find((f): f is Extract<Fault, { kind: 'kill' }> => f.kind === 'kill' && f.gen === gen);
    let busyAt = this.s.faults.find((f): f is Extract<Fault, { kind: 'busy' }> => f.kind === 'busy' && f.gen === gen);
    proc.orch = new Orchestrator(
      {
        db,
        driver,
        timers,
        now: Date.now,
        counters: null,
        hooks: {
          beforeCommit: (c) => {
            // Once: the commit it makes busy is tried again under the same number.
            if (busyAt && c === busyAt.commit) this.holdStore(busyAt.holdMs);
            if (busyAt && c >= busyAt.commit) busyAt = undefined;
          },
          inCommit: () => {},
          afterCommit: async (c) => {
            await this.judge.afterCommit(this.db);
            if (killAt && c === killAt.commit) {
              await this.kill(proc);
              this.later(() => this.spawn(w), killAt.restartMs);
              throw new Killed(`${name} killed after commit ${c}`);
            }
          },
        },
      },
      this.progress(proc),
      {
        type: TYPE,
        states: statesOf(TYPE, s.extra as { cert_file?: string | null }),
        stopOnFailure: s.stop_on_failure,
        campaign: s.created_at,
        extra: s.extra,
        stateTimeoutMs: Number(s.extra.state_timeout_ms) || TYPES[TYPE].defaultStateTimeoutMs,
        // A second between looks at the store (an apply's is 250 ms): the sim's cost is its polls.
        pollMs: 1_000,
        drainMs: 60_000,
        fence: lease ? (tx) => lease.check(tx) : (tx) => lock!.check(tx),
        shared: lease,
        host,
        file: this.ctx.dbPath,
      },
    );
    lease?.startHeartbeat(
      (lost) => proc.orch.stopWith(lost),
      (err) => proc.orch.writeFailed(err),
      (takeOver) => proc.orch.beat(takeOver),
    );
    lock?.startHeartbeat(
      (lost) => proc.orch.stopWith(lost),
      (err) => proc.orch.writeFailed(err),
    );
    this.procs.push(proc);
    this.log(`${name} starts (${s.state})`);
    proc.orch.run().then(
      (code) => this.ended(proc, w, `exit ${code}`),
      (err: Error) => this.ended(proc, w, err instanceof Killed ? null : `error: ${err.message}`),
    );
  }

  private async ended(p: Proc, w: number, how: string | null): Promise<void> {
    if (p.timers.dead) return;
    p.ended = true;
    this.hit('adopted', p.driver.adopted);
    try {
      await p.lease?.leave();
    } catch {
      // Taken over already, or the store busy: the lease runs out.
    }
    p.lease?.stopHeartbeat();
    try {
      await p.lock?.release();
    } catch {
      // A busy store: the next apply takes the lock of a process that is gone.
    }
    // The process has exited: a lock row it could not remove names a pid that no longer runs.
    if (p.lock) await this.markGone(p.lock.token, 4_190_000 + p.gen);
    p.timers.kill();
    p.db.close();
    p.beatDb?.close();
    this.log(`${p.name} ends: ${how}`);
    const state = (await getStrategy(this.db))?.state ?? 'none';
    if (!ENDED.includes(state)) {
      // Interrupted, lost its lease, or stopped by a store that stayed busy: the operator (or the
      // host's service) applies again, as the message says; a bounded number of times.
      if (this.restarts++ < 50) this.later(() => this.spawn(w), 5_000);
      return;
    }
    if (state !== 'complete' && this.s.retry && !this.retried && !this.alive().length) {
      this.retried = true;
      this.later(() => this.retryAndApply(w, 'retry'), 10_000);
    }
  }

  /** The sim's processes alive now (not ended, not killed). */
  private alive(): Proc[] {
    return this.procs.filter((p) => !p.ended && !p.timers.dead);
  }

  /** `strategy retry`, then `strategy apply` if none runs; refused while a run goes (the apply on its way adopts it). */
  private retryAndApply(w: number, what: string): void {
    void this.operator(what, async () => {
      await strategyRetry(this.ctx, undefined, { clouds: [] });
      const again = await this.db
        .prepare(`SELECT sc.name FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE st.state = 'initial'`)
        .pluck()
        .all() as string[];
      for (const site of again) this.sites.newEntry(site);
      if (!this.alive().length) await this.spawn(w);
    });
  }

  private async kill(p: Proc): Promise<void> {
    this.hit('kill');
    this.log(`${p.name} killed`);
    p.timers.kill();
    p.lease?.stopHeartbeat();
    p.lock?.stopHeartbeat();
    // Its pid is gone: the lock row names a process that no longer runs (all the sim's processes share this one's).
    if (p.lock) await this.markGone(p.lock.token, 4_190_000 + p.gen);
    this.hit('adopted', p.driver.adopted);
    p.driver.adopted = 0;
    if (p.db.open) p.db.close();
    if (p.beatDb?.open) p.beatDb.close();
  }

  private async markGone(token: string, pid: number): Promise<void> {
    if (Date.now() < this.busyUntil) return this.later(() => this.markGone(token, pid), this.busyUntil - Date.now() + 1);
    await this.db.prepare('UPDATE apply_lock SET pid = $1 WHERE token = $2').run(pid, token);
  }

  /** Another connection holds the store's write lock for `ms`. */
  private holdStore(ms: number): void {
    if (Date.now() < this.busyUntil) return;
    this.hit('busy');
    const held = this.store.holdWriters();
    this.busyUntil = Date.now() + ms;
    this.log(`store held busy for ${ms} ms`);
    setTimeout(() => void held.then((release) => release()), ms);
  }

  private arm(f: Fault): void {
    /** Worker `n`'s process now running, if any (several hosts). */
    const worker = (n: number) => this.alive().find((q) => q.name.startsWith(`worker${n}#`));
    switch (f.kind) {
      case 'pause':
        this.later(() => void this.operator('pause', () => strategyPause(this.ctx)), f.atMs);
        this.later(() => void this.operator('resume', () => strategyResume(this.ctx)), f.atMs + f.forMs);
        break;
      case 'window':
        this.later(() => void this.operator('window', async () => {
          for (const [stage, w] of this.sites.windows) this.sites.windows.set(stage, Math.max(w, f.size));
          await strategyUpdate(this.ctx, undefined, { maxParallelSubclouds: f.size });
        }), f.atMs);
        break;
      case 'abort':
        this.later(() => {
          if (this.alive().length) return void this.operator('abort', () => strategyAbort(this.ctx));
          // One host, no apply alive (killed, not started again yet): the command finishes the abort,
          // leaving the runs still going to the next apply; the operator retries a second later, as
          // at 3 a.m. Nothing may start beside a run still going. (Several hosts: beside a worker.)
          if (this.s.hosts > 1) return;
          void this.operator('abort-no-apply', async () => {
            await strategyAbort(this.ctx);
            if ((await getStrategy(this.db))?.state === 'aborting') this.hit('abort-left-going');
            this.later(() => this.retryAndApply(0, 'retry-after-abort'), 1_000);
          });
        }, f.atMs);
        break;
      case 'interrupt':
        this.later(() => {
          for (const p of this.alive()) {
            this.hit('interrupt');
            p.orch.interrupt('SIGINT');
            if (f.twice) p.orch.interrupt('SIGINT');
          }
        }, f.atMs);
        break;
      case 'freeze':
        this.later(() => {
          const p = worker(f.worker);
          if (!p) return;
          this.hit('freeze');
          this.log(`${p.name} frozen for ${f.forMs} ms`);
          p.timers.freeze();
          this.later(() => {
            this.log(`${p.name} continued`);
            p.timers.thaw();
          }, f.forMs);
        }, f.atMs);
        break;
      case 'cut':
        this.later(() => {
          this.hit('cut');
          void this.store.cutSessions().then(() => this.log("the server cut dcm's sessions"));
        }, f.atMs);
        break;
      case 'kill-worker':
        this.later(async () => {
          const p = worker(f.worker);
          if (!p) return;
          await this.kill(p);
          this.later(() => this.spawn(f.worker), f.restartMs);
        }, f.atMs);
        break;
      default:
        break;
    }
  }

  /** An operator command from another shell; one the store refuses now (busy, wrong state) is said and dropped. */
  private async operator(what: string, fn: () => Promise<unknown>): Promise<void> {
    if (Date.now() < this.busyUntil) {
      this.later(() => void this.operator(what, fn), this.busyUntil - Date.now() + 1);
      return;
    }
    try {
      await fn();
      this.hit(what);
      this.log(`operator: ${what}`);
    } catch (err) {
      this.log(`operator: ${what} refused: ${(err as Error).message}`);
    }
  }

  private progress(p: Proc): ProgressSink {
    return {
      transition: () => {},
      note: (text) => {
        this.log(`${p.name}: ${text}`);
        if (/^took over/.test(text)) this.hit('takeover-note');
        if (/^resuming: \d+ operation/.test(text)) this.hit('interrupted-rerun');
      },
      warn: (text) => this.log(`${p.name}: ${text}`),
      summary: () => {},
    } as ProgressSink;
  }
}
