/**
 * The operator of a simulated rollout, and the host's service that starts `apply` again: what a
 * person at 3 a.m. does with the real commands (commands/*), from a shell of their own. An apply
 * that ended with the strategy still going is started again a little later; one killed is started
 * again when its fault says; a lost host's worker moves to a spare one. Runs held as of unknown
 * outcome are looked up at their site and resolved as it says they ended (ok, failed), or run
 * again (`strategy retry CLOUD`) when the site says they were cut off. A strategy that ended failed
 * or aborted is retried once when the schedule says so.
 *
 * It also owns the commits' hooks of every apply: the judge after each commit, and the kills that
 * fall on a commit.
 */
import { strategyAbort } from '../commands/abort.js';
import { strategyResume, strategyRetry } from '../commands/control.js';
import { stepResolve } from '../commands/resolve.js';
import { strategyStatus } from '../commands/status.js';
import { strategyReport } from '../commands/report.js';
import type { ShowResult } from '../commands/plain-results.js';
import { STRATEGY_ENDED as ENDED } from '../domain/types.js';
import type { CommitHooks } from '../orchestrator/runtime.js';
import { sql } from '../store/statements.js';
import type { SimHost } from './hosts.js';
import { quietAt } from './schedule.js';
import type { Apply, World } from './world.js';

/** How often the operator looks at the rollout (status, then what it calls for). */
const LOOK_MS = 30_000;
/** An apply that ended with the strategy still going is started again this much later. */
const AGAIN_MS = 5_000;
/** Starts of `apply` the operator makes at most (a strategy that never ends is the judge's to say). */
const MAX_RESTARTS = 60;

/** How long a command waits for a file another session holds (store/open.ts: busy_timeout). */
const COMMAND_BUSY_MS = 10_000;

export class Operator {
  private restarts = 0;
  private retried = false;
  /** Spawns due and not made yet, per worker: none is started twice for one reason. */
  private readonly due = new Set<number>();
  private readonly back = new Map<SimHost, (() => void)[]>();
  private readonly quiet: number;

  constructor(private readonly world: World) {
    this.quiet = quietAt(world.s);
  }

  /** The operator's looks are going (one due every LOOK_MS). */
  private looking = false;

  /**
   * The operator looks every LOOK_MS while the rollout goes, and stops once it ended with no apply
   * alive; a retry that makes it go again starts the looks again (retryAndApply): without them a
   * run held as of unknown outcome after that retry is never resolved, and the strategy never ends.
   */
  start(): void {
    if (this.looking) return;
    this.looking = true;
    const look = () => {
      this.world.background('the operator\'s look', () => this.look());
      if (!this.world.ended || this.world.live().length) this.world.loop.after(LOOK_MS, look);
      else this.looking = false;
    };
    this.world.loop.after(LOOK_MS, look);
  }

  /** A statement of `host`'s waits until the host is back (sim-db.ts). */
  whenBack(host: SimHost, resolve: () => void): void {
    this.back.set(host, [...(this.back.get(host) ?? []), resolve]);
  }

  /** `host` is reachable again: what waited for it goes on. */
  healed(host: SimHost): void {
    host.cut = false;
    for (const r of this.back.get(host) ?? []) r();
    this.back.delete(host);
  }

  /** Worker `w` (or the next apply) starts again `ms` from now, unless one is already due. */
  again(w: number, ms: number): void {
    if (this.due.has(w) || this.restarts >= MAX_RESTARTS) return;
    this.due.add(w);
    this.restarts++;
    this.world.loop.after(ms, () => {
      this.due.delete(w);
      const running = this.world.live().some((a) => this.world.s.hosts === 1 || a.w === w);
      if (!running) this.world.spawn(w);
    });
  }

  /** The judge after every commit; the kills of one host's schedule, right after theirs. */
  commitHooks(a: Apply): CommitHooks {
    const w = this.world;
    const kill = w.s.faults.find((f) => f.kind === 'kill' && f.gen === a.gen) as { commit: number; restartMs: number; abortAfterMs?: number } | undefined;
    return {
      beforeCommit: () => {},
      inCommit: () => {},
      afterCommit: async (n) => {
        if (a.proc.dead) return new Promise<void>(() => {});
        w.sawState(await w.judge.afterCommit(w.db));
        if (kill && n === kill.commit) {
          w.hit('kill');
          w.log(`${a.proc.name} killed after commit ${n}`);
          a.proc.kill();
          this.again(a.w, kill.restartMs);
          // At 3 a.m.: the apply died, and the operator aborts before anything starts it again.
          if (kill.abortAfterMs !== undefined) w.loop.after(kill.abortAfterMs, () => w.background('abort', () => this.abort()));
          // Nothing of the process runs on: this commit's caller waits for ever.
          return new Promise<void>(() => {});
        }
      },
    };
  }

  /**
   * `strategy abort` from another shell; with no apply alive, the command finishes it itself (or
   * leaves it `aborting` for runs still going or ended unread), and a retry comes a second later,
   * as at 3 a.m.: nothing may start beside a run still going.
   */
  async abort(): Promise<void> {
    const w = this.world;
    const alone = w.live().length === 0;
    if (!(await this.command(alone ? 'abort-no-apply' : 'abort', () => strategyAbort(w.ctx)))) return;
    if (alone && (await w.strategyState()) === 'aborting') w.hit('abort-left-going');
    if (alone) this.later(1_000, 'retry-after-abort');
  }

  /** Retries the operator has in mind and has not typed yet: the rollout is not over before them (world.ts). */
  planned = 0;

  /** `strategy retry` (then an apply) `ms` from now, as `what`. */
  private later(ms: number, what: string): void {
    const w = this.world;
    this.planned++;
    w.loop.after(ms, () => w.background(what, () => this.retryAndApply(what).finally(() => this.planned--)));
  }

  /** An apply ended by itself (its exit, or an error). */
  async afterExit(a: Apply): Promise<void> {
    const state = await this.world.strategyState();
    if (!ENDED.includes(state)) return this.again(a.w, AGAIN_MS);
    await this.maybeRetry(state);
  }

  private async maybeRetry(state: string): Promise<void> {
    const w = this.world;
    if (state === 'complete' || !w.s.retry || this.retried || w.live().length) return;
    this.retried = true;
    this.later(10_000, 'retry');
  }

  /** `strategy retry` (the whole strategy), then an apply if none runs; refused while a run still goes. */
  async retryAndApply(what: string): Promise<void> {
    const w = this.world;
    await this.command(what, async () => {
      const before = await this.stepStates();
      await strategyRetry(w.ctx, undefined, { clouds: [] });
      const after = await this.stepStates();
      const changed = [...after].filter(([id, st]) => before.get(id) !== st).map(([id]) => id);
      w.judge.retriedSteps(changed);
      w.epoch++;
      w.ended = false;
      this.start();
      for (const [id, st] of after) if (st === 'initial' && before.get(id) !== 'initial') w.sites.newEntry(await this.siteOf(id), await this.nextFirstAttempt(id));
    });
    if (!w.live().length) this.again(0, 0);
  }

  /** The operator's look: start an apply where none runs, resolve what is held, resume what the schedule paused. */
  private async look(): Promise<void> {
    const w = this.world;
    if (w.loop.now < this.quiet && !w.ended) {
      if (!w.live().length && this.due.size === 0) this.again(this.firstHost(), 0);
      return;
    }
    const state = await w.strategyState();
    if (ENDED.includes(state)) return void (await this.maybeRetry(state));
    if (state === 'paused') await this.command('resume', () => strategyResume(w.ctx));
    await this.resolveHeld();
    if (!w.live().length && this.due.size === 0) this.again(this.firstHost(), 0);
  }

  /** The first worker whose host is not lost (one host: 0). */
  private firstHost(): number {
    return 0;
  }

  /**
   * Each run held as of unknown outcome, looked up at its site: ended ok or failed, resolved so;
   * cut off (killed with its host), run again; still going, left to end.
   */
  async resolveHeld(): Promise<void> {
    const w = this.world;
    const rows = (await sql(
      w.db,
      `SELECT sc.name AS cloud, h.state, h.attempt FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id
        WHERE h.outcome = 'running' AND h.details LIKE 'unknown%'`,
    ).all()) as { cloud: string; state: string; attempt: number }[];
    for (const r of rows) {
      const e = w.sites.find(r);
      if (e && e.endMs === null) continue;
      if (e && (e.outcome === 'ok' || e.outcome === 'failed')) {
        await this.command('resolve', () => stepResolve(w.ctx, r.cloud, e.outcome as 'ok' | 'failed', 'the site says so'));
      } else {
        await this.command('retry-unknown', () => strategyRetry(w.ctx, undefined, { clouds: [r.cloud] }));
      }
    }
  }

  /** An operator command from another shell; one refused now (busy, wrong state) is said and dropped. */
  async command(what: string, fn: () => Promise<unknown>): Promise<boolean> {
    const w = this.world;
    // A write from another shell while another session holds the file waits as SQLite's busy
    // timeout lets it (10 s), on the world's clock: on the real one, its wait would stop the world
    // (virtual time stands still while a statement blocks), and the hold could never end meanwhile.
    const held = w.store.server ? 0 : w.busyUntil - w.loop.now;
    if (held > 0) {
      await new Promise<void>((r) => w.loop.after(Math.min(held + 1, COMMAND_BUSY_MS), r));
      if (held >= COMMAND_BUSY_MS) {
        w.log(`operator: ${what} refused: database is locked`);
        return false;
      }
    }
    try {
      await fn();
      w.hit(what);
      w.log(`operator: ${what}`);
      return true;
    } catch (err) {
      w.log(`operator: ${what} refused: ${(err as Error).message}`);
      return false;
    }
  }

  private async stepStates(): Promise<Map<number, string>> {
    const rows = (await sql(this.world.db, 'SELECT id, state FROM strategy_step').all()) as { id: number; state: string }[];
    return new Map(rows.map((r) => [r.id, r.state]));
  }

  /** The attempt a retried step's first state opens its new entry with: the one after the history's last. */
  private async nextFirstAttempt(stepId: number): Promise<number> {
    const last = await sql(this.world.db, 'SELECT max(attempt) FROM step_history WHERE step_id = $1 AND state = $2').pluck().get(stepId, this.world.states[0]);
    return Number(last ?? 0) + 1;
  }

  private async siteOf(stepId: number): Promise<string> {
    return (await sql(this.world.db, 'SELECT sc.name FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id WHERE st.id = $1').pluck().get(stepId)) as string;
  }

  /** What the operator is told at the end (status, the report), against the store's own counts. */
  async tell(): Promise<void> {
    const w = this.world;
    const rows = (await sql(w.db, 'SELECT state, COUNT(*) AS n FROM strategy_step GROUP BY state').all()) as { state: string; n: number }[];
    const stored: Record<string, number> = { initial: 0, 'in progress': 0, complete: 0, failed: 0, deferred: 0, aborted: 0 };
    for (const r of rows) stored[r.state in stored && r.state !== 'in progress' ? r.state : 'in progress'] += Number(r.n);
    try {
      const status = (await strategyStatus(w.ctx)) as ShowResult;
      const said = Object.fromEntries(status.fields.map((f, i) => [f, status.values[i] as number]));
      w.judge.told('strategy status', said, stored);
      const report = (await strategyReport(w.ctx, undefined, '-', (m) => JSON.stringify(m.counts))) as { text: string };
      const counts = JSON.parse(report.text) as Record<string, number>;
      w.judge.told('the report', counts, { complete: stored.complete, failed: stored.failed, aborted: stored.aborted, initial: stored.initial });
    } catch (err) {
      w.sites.violation('told', `strategy status or the report failed: ${(err as Error).message}`);
    }
  }
}
