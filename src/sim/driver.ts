/**
 * One simulated worker's driver (drivers/driver.ts) onto the sites, through its launcher
 * (launcher.ts), as the exec driver is: a run is handed to the launcher and its end comes back
 * through the worker's own timers (never if it was killed, once continued if it was frozen); a run
 * an earlier worker of this host left is adopted through the sites' record (the exec driver reads
 * its files); a run of another host's is learnt from the end its launcher writes to the store.
 */
import type { Adoption, Driver, LeftRun, OperationRequest, OperationResult, RemoteRun } from '../drivers/driver.js';
import { runIdOf } from '../drivers/exec/run-id.js';
import { LATE_TIMER_MS, WOKEN_GRACE_MS } from '../drivers/exec/waits.js';
import type { SimHost, SimProcess } from './hosts.js';
import { SimLauncher, type Backstop, type RunBook, type RunEnd } from './launcher.js';
import type { LedgerEntry, Sites } from './sites.js';

/** The launcher's grace past a state's timeout before it stops a run itself (the exec driver's backstop). */
export const BACKSTOP_GRACE_MS = 10_000;

function resultOf(e: LedgerEntry): OperationResult {
  switch (e.outcome) {
    case 'ok':
      return { kind: 'next' };
    case 'defer':
      return { kind: 'defer', reason: 'exit 75: the site did not answer' };
    case 'failed':
      return { kind: 'failed', reason: 'exit 1: the state failed' };
    default:
      return { kind: 'retry', outcome: 'interrupted', reason: 'the run was ended by SIGKILL', delayMs: 0 };
  }
}

export class SimDriver implements Driver {
  /** As the exec driver: a state's timeout is the run's own (the worker stops it; its launcher too, a grace later). */
  readonly ownsTimeouts = true;
  /** As the exec driver: a run begins once its launcher claimed it and started it (`onStarted`). */
  readonly reportsStarts = true;
  /** Runs adopted from an earlier worker of this host. */
  adopted = 0;
  private launcher: SimLauncher | null = null;
  readonly remote?: (left: LeftRun, req: OperationRequest) => RemoteRun;
  private readonly mine = new Set<LedgerEntry>();

  constructor(
    private readonly worker: SimProcess,
    private readonly host: SimHost,
    private readonly sites: Sites,
    private readonly backstop: Backstop,
    /** Several hosts: where the launcher claims runs and writes their ends; absent: one host, its files. */
    private readonly book: RunBook | null,
    private readonly lease: { token: () => string; ms: number } | null,
    private readonly log: (line: string) => void,
    /** The launchers this driver starts, for the world (a host lost takes them). */
    private readonly started: (l: SimLauncher) => void,
  ) {
    if (book) this.remote = (left, req) => this.remoteRun(left, req);
  }

  private launcherOf(): SimLauncher {
    if (!this.launcher) {
      this.launcher = new SimLauncher(this.host, this.sites, this.book, this.lease && { token: this.lease.token(), ms: this.lease.ms }, this.log, this.worker.name);
      this.started(this.launcher);
    }
    return this.launcher;
  }

  run(req: OperationRequest): Promise<OperationResult> {
    // A dead process starts nothing; its registry entry waits for ever, as nothing of it runs.
    if (this.worker.dead) return new Promise<OperationResult>(() => {});
    const launcher = this.launcherOf();
    const timeoutMs = this.backstop.killAfterMs;
    return new Promise<OperationResult>((resolve) => {
      let entry: LedgerEntry | null = null;
      let timedOut = false;
      // As the exec driver's: a timeout fired well past its due (this process was frozen) first
      // lets an end that came meanwhile be heard (drivers/exec/index.ts WOKEN_GRACE_MS).
      const clock = this.worker.runtime().clock;
      const dueMono = timeoutMs === null ? 0 : clock.mono() + timeoutMs;
      let settled = false;
      const expire = () => {
        if (settled) return;
        timedOut = true;
        if (entry) launcher.stop(entry);
      };
      const deadline = timeoutMs === null ? null : this.worker.timers.after(() => {
        if (clock.mono() - dueMono > LATE_TIMER_MS) this.worker.timers.after(expire, WOKEN_GRACE_MS);
        else expire();
      }, timeoutMs);
      req.signal.addEventListener('abort', () => {
        if (entry) launcher.stop(entry);
      });
      launcher.start(req, this.backstop, (end: RunEnd) => {
        if ('refused' in end) return this.worker.run(() => resolve({ kind: 'failed', reason: end.refused }));
        // Begun: its start is known to the worker at once (the launcher's `{pid}` message).
        if (end.entry.endMs === null) {
          entry = end.entry;
          this.mine.add(entry);
          // No process of its own to record: the site's ledger is the simulated world's record.
          this.worker.run(() => req.onStarted?.(null));
          if (req.signal.aborted || timedOut) launcher.stop(entry);
          return;
        }
        this.mine.delete(end.entry);
        this.worker.run(() => {
          settled = true;
          deadline?.clear();
          resolve(timedOut ? { kind: 'failed', reason: `timed out after ${timeoutMs! / 1000}s`, timeout: true } : resultOf(end.entry));
        });
      });
    });
  }

  adopt(left: LeftRun, req: OperationRequest): Adoption {
    const entry = this.sites.find(left);
    if (!entry || entry.host !== this.host.name) return { kind: 'interrupted' };
    this.adopted++;
    const result = new Promise<OperationResult>((resolve) => {
      const deliver = () => this.worker.run(() => resolve(resultOf(entry)));
      if (entry.endMs !== null) deliver();
      else entry.ended.push(deliver);
    });
    // An adopted run is stopped as a run of this process is.
    req.signal.addEventListener('abort', () => this.worker.run(() => this.sites.stop(entry)));
    return { kind: 'wait', result };
  }

  /** A run of another host's: its end as the book has it, its bound the state's timeout and the backstop's grace. */
  private remoteRun(left: LeftRun, req: OperationRequest): RemoteRun {
    const timeout = this.backstop.killAfterMs;
    return {
      key: runIdOf(req),
      maxLeftMs: timeout === null ? Infinity : timeout + 2 * this.backstop.graceMs,
      rerunAfterBound: this.backstop.rerunAfterBound === true,
      outcome: async (end) =>
        end.code === 0
          ? { kind: 'next' }
          : end.code === 75
            ? { kind: 'defer', reason: 'exit 75: the site did not answer' }
            : end.code === null
              ? { kind: 'retry', outcome: 'interrupted', reason: `the run was ended by ${end.signal ?? 'a signal'} on ${left.host ?? 'its host'}`, delayMs: 0 }
              : { kind: 'failed', reason: `exit ${end.code}: the state failed` },
    };
  }

  async close(opts: { leaveRunning?: boolean } = {}): Promise<void> {
    // dcm never leaves a run behind, but those it leaves to the worker that took it over.
    if (!opts.leaveRunning) for (const e of this.mine) this.launcher?.stop(e);
  }
}
