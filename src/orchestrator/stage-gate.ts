/**
 * Stage gates while applying (README "Stage gates"): a stage's own failure budget, and its gate
 * once its window has run and before the next stage starts. What to do is decided in
 * src/domain/stage-gates.ts from the file's rows and the time; this module writes each outcome
 * (in the orchestrator's fenced transaction, with its event), waits (a soak, a resume) and runs
 * the check. Every wait is computed from the file, not held in memory only: an apply killed in a
 * soak waits the rest of it when started again, one killed at a pause waits for `resume`.
 *
 * It never sees the registry: the orchestrator tells it when a pause, a resume, an abort or a
 * signal happened (`wake`), and it asks the orchestrator whether the run is ending.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterStage, checkOutcome, parseStageGate, stageBudgetExceeded, stageFailureLimit, type GateState } from '../domain/stage-gates.js';
import { formatDuration } from '../domain/durations.js';
import { visibleLine } from '../domain/outside-text.js';
import { EVENTS } from '../domain/events.js';
import type { Db } from '../store/open.js';
import { parseTime, timeAt } from '../store/clock.js';
import { recordEvent } from '../store/events.js';
import { casStrategyState, getStrategy } from '../store/strategy.js';
import { listStageGates, setGateState, stageCloudNames, stageGate, stagesWithSteps, stageTally } from '../store/stage-gates.js';
import { sleepOn, type Timer } from '../platform/timers.js';
import type { Actor } from '../platform/who.js';
import { processesWithEnv } from '../platform/proc.js';
import type { ProcessRuntime } from '../platform/runtime.js';

/**
 * A gate check carries `DCM_GATE_CHECK=<strategy's created_at>/<stage>` in its environment, as a
 * run carries DCM_RUN_ID: an apply killed with -9 during a check leaves it running (in a process
 * group of its own, which nothing stops), and the next apply finds it by this tag and stops it
 * before it runs its own, so that one check of a stage runs at a time and none outlives its apply
 * for long. By /proc: only on this host (README "Stage gates").
 */
export const GATE_CHECK_TAG = 'DCM_GATE_CHECK';

/** How long a left check has after SIGTERM before SIGKILL, and how long it then has to be gone. */
const LEFT_CHECK_GRACE_MS = 5_000;
const LEFT_CHECK_KILL_MS = 5_000;

export interface GateHost {
  /**
   * Whether the strategy is paused (by a gate or by the operator), as the file says; the
   * orchestrator follows the file first. The file, not the poll: a resume committed between this
   * process's own pause and the poll's next look would otherwise go unseen.
   */
  syncPaused(): Promise<boolean>;
  /** An abort, a signal, a fatal error or the strategy's own budget: no gate runs, no stage starts. */
  ending(): boolean;
  /** The orchestrator's fenced write, retried while the file is busy. */
  write<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  /** The gate paused the strategy (written already): say so, and stop starting subclouds. */
  pause(reason: string): void;
  note(text: string): void;
  type: string;
  who?: Actor;
  /**
   * One of several workers (workers.ts): whether this one runs the gates now. The others wait for
   * what it records, so that a soak is started and a check run once, whatever the workers.
   */
  leads?(): Promise<boolean>;
}

/** How often a worker that does not run the gates looks at what the one that does has recorded. */
const FOLLOW_MS = 250;

/** A stage's own failure budget while its window runs. */
export class StageBudget {
  private said = false;

  constructor(
    readonly stage: number,
    private failed: number,
    private limit: number | null,
    private text: string | null,
    /** Promoted by the operator after it was exceeded: it holds the stage no more. */
    private readonly promoted: boolean,
    private readonly note: (text: string) => void,
  ) {}

  exceeded(): boolean {
    return !this.promoted && stageBudgetExceeded(this.failed, this.limit);
  }

  /** `strategy update` changed the stage's budget while it runs: it counts from now; true if it changed. */
  setBudget(text: string | null, limit: number | null): boolean {
    if (text === this.text && limit === this.limit) return false;
    this.text = text;
    this.limit = limit;
    this.said = false;
    this.note(`stage ${this.stage} failure budget: ${limit === null ? 'none' : `more than ${limit} failed step(s) hold it`} (${this.failed} failed so far)`);
    return true;
  }

  /** A step of the stage failed (counted when decided, as the strategy's budget is). */
  stepFailed(cloud: string): void {
    this.failed++;
    if (this.exceeded() && !this.said) {
      this.said = true;
      this.note(`${cloud} failed: stage ${this.stage} has ${this.failed} failed step(s), more than its budget of ${this.limit} (--stage-max-failures ${this.text}): no new subcloud of it will start`);
    }
  }
}

/** What the stage loop does next: the next stage, the rest of this one (promoted), or stop. */
export type AfterStage = 'go' | 'again' | 'stop';

export class StageGates {
  private wakeUp: (() => void) | null = null;
  private timer: Timer | null = null;
  private check: ChildProcess | null = null;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly host: GateHost,
    private readonly rt: Pick<ProcessRuntime, 'clock' | 'timers' | 'procs'>,
  ) {}

  /**
   * The stages the run goes through, in order: every stage from the first that is open (has a step
   * not ended) or has not passed its gate (a stage killed in its soak, or at its pause).
   */
  async stagesFrom(open: readonly number[]): Promise<number[]> {
    const rows = await listStageGates(this.db);
    const all = await stagesWithSteps(this.db);
    const settled = new Set(rows.filter((r) => r.gate_state === 'passed' || r.gate_state === 'promoted' || (r.gate_state === null && r.gate === 'none' && r.max_failures === null)).map((r) => r.stage));
    const first = all.findIndex((st) => open.includes(st) || !settled.has(st));
    return first < 0 ? [] : all.slice(first);
  }

  /** The budget of a stage about to run (its failures so far are the file's). */
  async budget(stage: number): Promise<StageBudget> {
    const row = await stageGate(this.db, stage);
    const tally = await stageTally(this.db, stage);
    const text = row?.max_failures ?? null;
    return new StageBudget(stage, tally.failed, stageFailureLimit(text, tally.total), text, row?.gate_state === 'promoted', (t) => this.host.note(t));
  }

  /** Another process committed (perhaps `strategy update` of the running stage's budget): true if it changed. */
  async refreshBudget(b: StageBudget): Promise<boolean> {
    const row = await stageGate(this.db, b.stage);
    const text = row?.max_failures ?? null;
    return b.setBudget(text, stageFailureLimit(text, (await stageTally(this.db, b.stage)).total));
  }

  /** Something the gate may wait for happened (resume, pause, abort, signal): look again. */
  wake(): void {
    const w = this.wakeUp;
    this.wakeUp = null;
    this.timer?.clear();
    this.timer = null;
    w?.();
  }

  /** The run is over: no timer is left to keep the process alive, and a check still running is stopped. */
  stop(): void {
    this.stopped = true;
    this.killCheck();
    this.wake();
  }

  /** Once the stage's window has run: its budget, then its gate; resolves when the loop may go on. */
  async after(stage: number, next: number | null): Promise<AfterStage> {
    for (;;) {
      if (this.stopped || this.host.ending()) return 'stop';
      const row = await stageGate(this.db, stage);
      if (!row) return 'go';
      const tally = await stageTally(this.db, stage);
      const action = afterStage({
        stage,
        next,
        gate: parseStageGate(row.gate),
        state: row.gate_state,
        failed: tally.failed,
        limit: stageFailureLimit(row.max_failures, tally.total),
        notStarted: tally.initial,
        endedMs: tally.lastEnd === null ? null : parseTime(tally.lastEnd),
        dueMs: row.gate_due_at === null ? null : parseTime(row.gate_due_at),
        paused: await this.host.syncPaused(),
        nowMs: this.rt.clock.wall(),
      });
      if (this.host.leads && !await this.host.leads()) {
        // Only what is settled in the record moves this worker on; the rest is the leader's to do.
        if (action.kind === 'go' && !action.record) return 'go';
        if (action.kind === 'again') return 'again';
        await this.sleep(FOLLOW_MS);
        continue;
      }
      if (action.kind === 'go') {
        if (action.record) {
          const { state, reason } = action.record;
          await this.record(stage, state, reason);
          this.host.note(reason);
          // Promoted after its budget stopped it: the rest of the stage runs first.
          if (state === 'promoted' && tally.initial > 0) return 'again';
        }
        return 'go';
      }
      if (action.kind === 'again') return 'again';
      if (action.kind === 'pause') {
        await this.record(stage, action.state, action.reason, null, true);
        this.host.pause(action.reason);
        continue;
      }
      if (action.kind === 'wait') {
        await this.sleep(null);
        continue;
      }
      if (action.kind === 'soak') {
        if (action.start) {
          const text = `stage ${stage} ended: soaking ${formatDuration(action.dueMs - (tally.lastEnd === null ? this.rt.clock.wall() : parseTime(tally.lastEnd)))} before stage ${next}`;
          // The due time exactly as computed: a restart compares it with its own and must find it equal,
          // or it would record the soak's start a second time.
          await this.record(stage, 'soaking', text, timeAt(action.dueMs));
          this.host.note(`${text} (${formatDuration(Math.max(0, action.dueMs - this.rt.clock.wall()))} left)`);
        }
        await this.sleep(Math.max(0, action.dueMs - this.rt.clock.wall()));
        continue;
      }
      // check
      const command = row.gate_check;
      const text = `stage ${stage} ended: running its gate check before stage ${next}`;
      await this.record(stage, 'checking', text);
      this.host.note(text);
      const result = command === null ? { code: 127, signal: null, lastLine: 'no gate check command' } : await this.runCheck(command, stage, next!);
      if (result === null || this.stopped || this.host.ending()) return 'stop';
      const outcome = checkOutcome(stage, next!, result);
      if (outcome.kind === 'go') {
        await this.record(stage, 'passed', outcome.record.reason);
        this.host.note(outcome.record.reason);
        return 'go';
      }
      await this.record(stage, 'paused', outcome.reason, null, true);
      this.host.pause(outcome.reason);
    }
  }

  /** The gate's outcome and its event, in one fenced transaction; `pause`: the strategy too. */
  private record(stage: number, state: GateState, reason: string, dueAt: string | null = null, pause = false): Promise<void> {
    return this.host.write(async (tx) => {
      await setGateState(tx, stage, state, reason, dueAt);
      if (pause) await casStrategyState(tx, ['applying'], 'paused');
      if (this.host.who) await recordEvent(tx, this.host.who, EVENTS.stageGate, `stage ${stage}: ${state}: ${reason}`);
    });
  }

  /** Until woken, or `ms` (null: only woken). */
  private sleep(ms: number | null): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.stopped) return resolve();
      this.wakeUp = resolve;
      if (ms !== null) this.timer = this.rt.timers.after(() => this.wake(), ms);
    });
  }

  /**
   * The check, through /bin/sh -c in a process group of its own, with the stage and its subclouds
   * in its environment. Null: stopped (a signal, an abort) before it ended; the next apply runs it again.
   */
  private async runCheck(command: string, stage: number, next: number): Promise<{ code: number | null; signal: string | null; lastLine: string } | null> {
    const tag = `${(await getStrategy(this.db))?.created_at ?? ''}/${stage}`;
    await this.stopLeftChecks(tag, stage);
    if (this.stopped || this.host.ending()) return null;
    return await this.spawnCheck(command, stage, next, tag);
  }

  /**
   * The checks of this stage an earlier apply left running (killed with -9 while its check ran):
   * SIGTERM to each and to its process group, SIGKILL to what is left after a grace, each wait
   * bounded. Said once on stderr; a check that cannot be stopped (another user's) is said too, and
   * this apply's own runs beside it.
   */
  private async stopLeftChecks(tag: string, stage: number): Promise<void> {
    const left = processesWithEnv(GATE_CHECK_TAG, new Set([tag])).get(tag) ?? [];
    if (!left.length) return;
    this.host.note(`stage ${stage}: stopping the gate check an earlier apply left running (pid ${left.join(', ')}) before running it again`);
    const send = (sig: NodeJS.Signals) => {
      for (const pid of left) {
        for (const target of [-pid, pid]) {
          // Not a group leader, or gone already: nothing to do.
          this.rt.procs.kill(target, sig);
        }
      }
    };
    const gone = async (ms: number) => {
      const alive = (pid: number) => this.rt.procs.alive(pid);
      const end = this.rt.clock.mono() + ms;
      while (left.some(alive) && this.rt.clock.mono() < end && !this.stopped) await sleepOn(this.rt.timers, 25);
      return !left.some(alive);
    };
    send('SIGTERM');
    if (await gone(LEFT_CHECK_GRACE_MS)) return;
    send('SIGKILL');
    if (!await gone(LEFT_CHECK_KILL_MS)) this.host.note(`stage ${stage}: the gate check left running (pid ${left.filter((pid) => this.rt.procs.alive(pid)).join(', ')}) could not be stopped; running it again beside it`);
  }

  private async spawnCheck(command: string, stage: number, next: number, tag: string): Promise<{ code: number | null; signal: string | null; lastLine: string } | null> {
    const env = {
      ...process.env,
      [GATE_CHECK_TAG]: tag,
      DCM_STAGE: String(stage),
      DCM_NEXT_STAGE: String(next),
      DCM_STAGE_CLOUDS: (await stageCloudNames(this.db, stage)).join(' '),
      DCM_STRATEGY_TYPE: this.host.type,
    };
    return new Promise((resolve) => {
      let tail = '';
      const keep = (chunk: Buffer) => {
        tail = (tail + chunk.toString('utf8')).slice(-4096);
      };
      let child: ChildProcess;
      try {
        child = spawn('/bin/sh', ['-c', command], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      } catch (err) {
        resolve({ code: 127, signal: null, lastLine: (err as Error).message });
        return;
      }
      this.check = child;
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      child.on('error', (err) => {
        this.check = null;
        resolve({ code: 127, signal: null, lastLine: err.message });
      });
      child.on('close', (code, signal) => {
        this.check = null;
        if (this.stopped || this.host.ending()) return resolve(null);
        const lines = tail.split('\n').map((l) => l.trim()).filter(Boolean);
        // The check's words, escaped and cut (domain/outside-text.ts), before they reach the
        // record, the terminal and the report.
        resolve({ code, signal, lastLine: visibleLine(lines[lines.length - 1] ?? '') });
      });
      // Woken by a signal or an abort while it runs: it is stopped, and counts for nothing (a
      // pause or a resume meanwhile changes nothing of it: it keeps listening).
      const listen = () => {
        this.wakeUp = () => {
          if (this.stopped || this.host.ending()) this.killCheck();
          else if (this.check === child) listen();
        };
      };
      listen();
    });
  }

  private killCheck(): void {
    const c = this.check;
    if (!c || c.pid === undefined) return;
    this.rt.procs.kill(-c.pid, 'SIGTERM'); // false: gone already
  }
}
