/**
 * What must always hold, judged by what does not trust the judged: the sites' ledgers (sites.ts)
 * first, the store only where it is itself the subject (what the operator is told), never dcm's own
 * bookkeeping as proof of what the sites saw. Checked after every commit of every simulated
 * process, and at the end:
 *   - no step that ended (complete, failed, aborted) changes but by the operator's retry (an abort
 *     never touches an ended step: dcmanager LP 2125947);
 *   - a complete step ran each state of its type once, ok, in order, at its site;
 *   - every ok in the history is an ok at the site, and every ok at the site is one in the history;
 *   - no stage begins at the sites before every run of the stage before it has ended;
 *   - the strategy ends, every step of it ended, nothing left going at the sites (liveness: within
 *     the schedule's bound once its faults are over);
 *   - what the operator is told (`strategy status`, the report) is what the store holds.
 * The sites judge the rest as it happens (sites.ts): one operation per site at a time, no state ok
 * twice, the window in force.
 */
import type { Db } from '../store/open.js';
import { sql } from '../store/statements.js';
import { getStrategy } from '../store/strategy.js';
import { STRATEGY_ENDED as ENDED } from '../domain/types.js';
import type { LedgerEntry, Sites } from './sites.js';
import { rampSchedule, startRateViolations, type RateStart, type StartRate } from '../domain/start-rate.js';

export const INVARIANTS = [
  'at most one operation per site at a time (sites)',
  'a (site, state) that ended ok is never run again in one entry into its states (sites)',
  'no stage with more sites busy than the window in force at that moment (sites)',
  'no step that ended changes but by the operator\'s retry; an abort never touches an ended step',
  'a complete step ran each state of its type once, ok, in order (sites\' ledgers)',
  'every ok in the history is an ok at its site, and the other way round',
  'no stage begins before every run of the stage before it has ended (sites\' ledgers)',
  'the strategy ends, every step of it ended, no run left going (liveness: within the schedule\'s bound after its faults)',
  'no apply stops on its own writes found done (a run it closes found closed already: a COMMIT it took for lost)',
  'what the operator is told (strategy status, the report) is what the store holds',
  'no subcloud starts sooner after the one before it in its stage than the start rate in force allows',
];

const ENDED_STEP = ['complete', 'failed', 'aborted'];

/** Each stage's window over time: what the operator set, and when (virtual ms). */
/** A start rate set at `atMs` (null: removed), but in the stages `kept` (they had ended). */
export interface RateChange {
  atMs: number;
  rate: StartRate | null;
  kept?: ReadonlySet<number>;
}

export class WindowBook {
  private readonly changes = new Map<number, { t: number; size: number }[]>();

  constructor(
    initial: Map<number, number>,
    /** How long an orchestrator may take to apply a change (its poll of the store, and a margin). */
    private readonly graceMs: number,
  ) {
    for (const [stage, size] of initial) this.changes.set(stage, [{ t: -Infinity, size }]);
  }

  /** A change at `t` of every stage's window but those `kept` (ended: they keep what they ran with). */
  set(t: number, size: number, kept: ReadonlySet<number> = new Set()): void {
    for (const [stage, list] of this.changes) if (!kept.has(stage)) list.push({ t, size });
  }

  /**
   * The window a start at `t` is judged by: the size in force then, or a larger one set within the
   * grace before (a running orchestrator applies a change within a second: SPEC §4).
   */
  at(stage: number, t: number): number | undefined {
    const list = this.changes.get(stage);
    if (!list) return undefined;
    let inForce = list[0].size;
    let max = 0;
    for (const c of list) {
      if (c.t <= t - this.graceMs) inForce = c.size;
      else if (c.t <= t) max = Math.max(max, c.size);
    }
    return Math.max(inForce, max);
  }
}

export class Judge {
  /** Steps that ended, and how: only a retry may change them. */
  private readonly ended = new Map<number, string>();
  /** Steps the operator's retry put back (a new entry into their states). */
  private readonly retried = new Set<number>();

  constructor(
    private readonly sites: Sites,
    private readonly states: readonly string[],
  ) {}

  /** The operator's `strategy retry` committed: these steps may change once. */
  retriedSteps(ids: Iterable<number>): void {
    for (const id of ids) this.retried.add(id);
  }

  /** Site names by step id, read once: steps do not change subclouds. */
  private names: Map<number, string> | null = null;

  /** After a commit: the steps' states checked; returns the strategy's state, read in the same statement. */
  async afterCommit(db: Db): Promise<string> {
    const all = (await sql(db, 'SELECT id, state FROM strategy_step UNION ALL SELECT -1, state FROM strategy').all()) as { id: number; state: string }[];
    let strategy = 'none';
    this.names ??= new Map((await sql(db, 'SELECT st.id, sc.name FROM strategy_step st JOIN subcloud sc ON sc.id = st.subcloud_id').raw().all() as [number, string][]));
    for (const r of all) {
      if (r.id === -1) {
        strategy = r.state;
        continue;
      }
      const name = this.names.get(r.id) ?? `step ${r.id}`;
      const was = this.ended.get(r.id);
      if (was !== undefined && was !== r.state) {
        if (this.retried.has(r.id)) {
          this.retried.delete(r.id);
          this.ended.delete(r.id);
        } else {
          this.sites.violation(was === 'complete' ? 'step-reopened' : 'ended-step-changed', `step of ${name} had ended ${was} and is ${r.state}`);
          this.ended.set(r.id, r.state);
        }
      }
      if (ENDED_STEP.includes(r.state) && !this.ended.has(r.id)) {
        this.ended.set(r.id, r.state);
        this.retried.delete(r.id);
        if (r.state === 'complete') this.statesRan(name);
      }
    }
    return strategy;
  }

  /** A complete step's site ran each state of the type once, ok, in order, in its current entry. */
  private statesRan(site: string): void {
    const entry = this.sites.entryOf(site);
    // A fenced site's answer for a state done under an older claim did nothing: not a run of it.
    const oks = this.sites.ledger.filter((e) => e.site === site && e.entry === entry && e.outcome === 'ok' && !e.idempotent).map((e) => e.state);
    if (oks.join('\n') !== this.states.join('\n')) {
      this.sites.violation('states-not-run', `${site} is complete, but its site ran ok: ${oks.length ? oks.join(', ') : 'nothing'} (its states: ${this.states.join(', ')})`);
    }
  }

  /** The schedule is over: `late` says the strategy did not end within its bound (liveness). */
  async atEnd(db: Db, late: string | null, rates: readonly RateChange[] = []): Promise<void> {
    await this.afterCommit(db);
    const state = (await getStrategy(db))?.state ?? 'none';
    if (!ENDED.includes(state)) this.sites.violation(late ? 'liveness' : 'not-ended', `the strategy is ${state}${late ? `: ${late}` : ''}`);
    const open = Number(await sql(db, `SELECT COUNT(*) FROM strategy_step WHERE state NOT IN ('complete', 'failed', 'aborted')`).pluck().get());
    if (ENDED.includes(state) && open) this.sites.violation('lost-step', `${open} step(s) not ended in a ${state} strategy`);
    for (const e of this.sites.stillRunning()) this.sites.violation('left-going', `${e.site} ${e.state}#${e.attempt} still runs after the end`);
    await this.historyMatchesLedger(db);
    this.stagesInOrder();
    if (rates.length) this.startRate(rates);
  }

  /**
   * No subcloud's first start came sooner after the one before it in its stage than the rate in
   * force allowed (domain/start-rate.ts: the rate as set over time, ramped by the sites complete).
   * A start is each site's first begin of its first state in each entry into its states.
   */
  private startRate(rates: readonly RateChange[]): void {
    const last = this.states[this.states.length - 1];
    const completed = this.sites.ledger.filter((e) => e.state === last && e.outcome === 'ok' && e.endMs !== null).map((e) => e.endMs!);
    // A stage ended when a change came keeps the rate it ran with (a retry into it runs with it).
    const segments = (stage: number) => rampSchedule(rates.filter((r) => !r.kept?.has(stage)), completed);
    const seen = new Set<string>();
    const byStage = new Map<number, RateStart[]>();
    for (const e of this.sites.ledger) {
      const key = `${e.site}\u0000${e.entry}`;
      // A run of the first state tried again (interrupted, deferred) is no new start: only the
      // attempt that opened its entry (1, or after a retry the one after the history's last), as
      // the orchestrator paces the first starts it commits (orchestrator/pacer.ts).
      if (e.state !== this.states[0] || seen.has(key) || e.attempt !== this.sites.firstAttemptOf(e.site, e.entry)) continue;
      seen.add(key);
      byStage.set(e.stage, [...(byStage.get(e.stage) ?? []), { atMs: e.startMs, cloud: e.site }]);
    }
    for (const [stage, starts] of byStage) {
      for (const v of startRateViolations(starts, segments(stage))) {
        this.sites.violation('rate', `stage ${stage}: ${v.cloud} started ${v.earlyMs} ms sooner after ${v.previous.cloud} than ${v.perMin}/min allows`);
      }
    }
  }

  /** Every ok in the history is an ok at its site, and every ok at a site is one in the history. */
  private async historyMatchesLedger(db: Db): Promise<void> {
    const rows = (await sql(
      db,
      `SELECT sc.name AS site, h.state, h.attempt FROM step_history h JOIN strategy_step st ON st.id = h.step_id JOIN subcloud sc ON sc.id = st.subcloud_id WHERE h.outcome = 'ok'`,
    ).all()) as { site: string; state: string; attempt: number }[];
    const count = (m: Map<string, number>, k: string, d: number) => m.set(k, (m.get(k) ?? 0) + d);
    const diff = new Map<string, number>();
    for (const r of rows) count(diff, `${r.site} ${r.state}#${r.attempt}`, 1);
    // A run superseded at a fenced site (on_lost_host: rerun) whose end never reached the history is
    // what at least once means: the newer claim's run, which the site answered, is the step's.
    for (const e of this.sites.ledger) if (e.outcome === 'ok' && !(e.superseded && diff.get(`${e.site} ${e.state}#${e.attempt}`) === undefined)) count(diff, `${e.site} ${e.state}#${e.attempt}`, -1);
    for (const [k, n] of diff) {
      if (n > 0) this.sites.violation('history-ledger', `${k} is ok in the history but not at its site`);
      if (n < 0) this.sites.violation('history-ledger', `${k} ended ok at its site but not in the history`);
    }
  }

  /** No run of a later stage began before every run of an earlier stage had ended (within one epoch between retries). */
  private stagesInOrder(): void {
    const byEpoch = new Map<number, LedgerEntry[]>();
    for (const e of this.sites.ledger) byEpoch.set(e.epoch, [...(byEpoch.get(e.epoch) ?? []), e]);
    for (const entries of byEpoch.values()) {
      const stages = [...new Set(entries.map((e) => e.stage))].sort((a, b) => a - b);
      for (const [i, k] of stages.entries()) {
        const lastEnd = Math.max(...entries.filter((e) => e.stage === k).map((e) => e.endMs ?? Infinity));
        const later = entries.filter((e) => stages.indexOf(e.stage) > i);
        const early = later.find((e) => e.startMs < lastEnd);
        if (early) this.sites.violation('stage-order', `${early.site} (stage ${early.stage}) began at ${early.startMs} ms before stage ${k} ended at ${lastEnd} ms`);
        if (early) return;
      }
    }
  }

  /** What `strategy status` and the report say the steps are, against the store. */
  told(what: string, said: Record<string, number>, db: Record<string, number>): void {
    for (const k of Object.keys(db)) {
      if ((said[k] ?? 0) !== db[k]) this.sites.violation('told', `${what} says ${k} ${said[k] ?? 0}, the store holds ${db[k]}`);
    }
  }
}
