/**
 * The `exec` driver (SPEC §7.2): each state of a step is one command. Every run is its own process
 * group (spawned detached, stdin /dev/null) whose output goes straight to its log file, never
 * through a pipe to dcm: if dcm dies, a pipe would break (SIGPIPE kills the run) or fill (the run
 * hangs). Runs are started by the launcher (./launcher.ts), a small process that outlives dcm and
 * writes each run's pid and exit status beside its log, so a later apply can learn how a run ended
 * while dcm was down.
 *
 * Processes: node's child_process (execa was measured and adds cost per run without doing
 * anything needed here: see the README).
 */
import fs from 'node:fs';
import path from 'node:path';
import { formatDuration } from '../../domain/durations.js';
import type { Adoption, AuditOutcome, AuditRequest, Driver, LeftRun, OperationRequest, OperationResult, RemoteRun, RunProcess } from '../driver.js';
import { runAudit } from './audit.js';
import type { ExecConfig, StateSpec } from './config.js';
import type { LogLayout } from '../../domain/logs.js';
import { abandonRun, abandonStart, clearEarlierRun, readClaim, readStatus, readTaken, runBase, statusTimeMs, type RunClaim, type RunStatus } from './files.js';
import { runArgv, runCwd, runEnv, runValues } from './run-env.js';
import { terminateTagged, ticksNow } from './procs.js';
import { cleanLeftovers, killRun } from './stop-run.js';
import { Launcher, type Exited } from './launch.js';
import { processesWithEnv, procPasses } from '../../platform/proc.js';
import { setLongTimeout, sleep } from '../../platform/timers.js';
import { PRIVATE_DIR } from '../../platform/private.js';
import { runIdOf } from './run-id.js';
import { fileFacts, storedFacts, stoppedWhy, type RunFacts } from './run-facts.js';
import { TagScans, type GoingRun } from './tag-scans.js';
import { watchProgress } from './progress-file.js';
import { EX_TEMPFAIL } from '../../domain/deferral.js';
import { isPgUrl } from '../../domain/db-url.js';
import { pgParamsOf } from '../../platform/pg-params.js';
import { hostName } from '../../platform/who.js';
import { BACKSTOP_MS, LATE_TIMER_MS, UNDECIDED_LOOKS, WOKEN_GRACE_MS } from './waits.js';

/** Reasons and details are kept short: `<state>: <reason>` fits in 200 characters. */
const DETAILS_LIMIT = 200;

export interface ExecSettings {
  config: ExecConfig;
  /** Where the strategy's runs write: its folder, its layout, its id. */
  logs: LogLayout;
  dbPath: string;
  /** A server's store, with its password: only the launcher has it, to write each run's end (launcher.ts). */
  storeUrl?: string;
  sysadminPassword?: string;
  /** The worker's lease (a server's store): the launcher checks its runs' worker after a freeze this long (launcher.ts). */
  leaseMs?: number;
}

interface Live {
  pgid: number;
  /** Its group leader's start time (clock ticks since boot), once the launcher said; null before, or for a run adopted. */
  leaderStart: number | null;
  graceMs: number;
  runId: string;
  since: number;
  done: Promise<unknown>;
  /** The run's abort signal: aborted, it is being stopped. */
  signal: AbortSignal;
}

/** A run known by its files and its processes rather than by a launcher's answers. */
interface LeftProcess {
  base: string;
  runId: string;
  /** Its processes started at or after this (clock ticks since boot; 0: unknown). */
  since: number;
  /** Epoch ms after which it has timed out. */
  deadline: number;
  proc: RunProcess | null;
}

/** A claim that may belong to this run (none, or one left by an earlier strategy, does not). */
const live = (c: RunClaim | null): boolean => c !== null && !('stale' in c);

export class ExecDriver implements Driver {
  readonly ownsTimeouts = true;
  readonly reportsStarts = true;
  private readonly specs: Map<string, StateSpec>;
  /** Folders known to exist, and whether this process created them (then no stale file is there). */
  private readonly dirs = new Map<string, boolean>();
  /** Runs in flight, by subcloud: never two at once for one subcloud, whatever a caller does. */
  private readonly live = new Map<string, Live>();
  private closing = false;
  /** dcm's environment without its own DCM_* settings (DCM_DB of the shell, DCM_DEBUG…) and the store's password, made once. */
  private readonly baseEnv: NodeJS.ProcessEnv;
  private readonly launcher: Launcher;
  /** One /proc scan for the runs that end in the same turn (tag-scans.ts), told the groups of the runs going. */
  private readonly scans = new TagScans(() => this.runningGroups());

  /** The config's `audit`, when it has one (else the driver has no audit at all). */
  readonly audit?: (req: AuditRequest) => Promise<AuditOutcome>;
  /** Audits in flight: close() stops them and waits for them. */
  private readonly audits = new Map<AbortController, Promise<AuditOutcome>>();

  constructor(private readonly settings: ExecSettings) {
    this.specs = new Map(settings.config.states.map((s) => [s.state, s]));
    // On a server, PGPASSWORD is the store's password: it stays in dcm, as the address's does
    // (a run that must reach the database reads PGPASSFILE or a service file).
    const storeSecret = isPgUrl(settings.dbPath) ? 'PGPASSWORD' : null;
    this.baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DCM_') && k !== storeSecret));
    // The launcher claims runs with the parameters dcm connected with, handed through its input.
    const store = settings.storeUrl ? { params: pgParamsOf(settings.storeUrl), host: hostName(), ...(settings.leaseMs ? { leaseMs: settings.leaseMs } : {}) } : null;
    this.launcher = new Launcher(this.baseEnv, store);
    const spec = settings.config.audit;
    if (spec) this.audit = (req) => this.runAudit(spec, req);
  }

  private runAudit(spec: StateSpec, req: AuditRequest): Promise<AuditOutcome> {
    if (this.closing) return Promise.resolve({ ok: false, reason: 'audit: the exec driver is closed' });
    const stop = new AbortController();
    req.signal?.addEventListener('abort', () => stop.abort(), { once: true });
    if (req.signal?.aborted) stop.abort();
    const p = runAudit(spec, { ...req, signal: stop.signal }, { dbPath: this.settings.dbPath, sysadminPassword: this.settings.sysadminPassword }, this.baseEnv);
    this.audits.set(stop, p);
    return p.finally(() => this.audits.delete(stop));
  }

  private spec(state: string): StateSpec {
    const s = this.specs.get(state);
    if (!s) throw new Error(`the exec config has no command for state '${state}'`);
    return s;
  }

  /** The runs going that this process started, with their groups and their leaders' start times. */
  private *runningGroups(): Iterable<GoingRun> {
    for (const l of this.live.values()) if (l.pgid > 0 && l.leaderStart !== null) yield { runId: l.runId, pgid: l.pgid, leaderStart: l.leaderStart };
  }

  warm(): void {
    if (!this.closing) this.launcher.warm();
  }

  costs(): Record<string, number> {
    return { runs: this.launcher.launched, procPasses: procPasses() };
  }

  run(req: OperationRequest): Promise<OperationResult> {
    if (this.closing) return Promise.resolve({ kind: 'failed', reason: 'the exec driver is closed' });
    if (this.live.has(req.cloud)) {
      return Promise.resolve({ kind: 'failed', reason: 'a run of this subcloud is still going: refusing a second one' });
    }
    const spec = this.spec(req.state);
    // Its files' path, made once for the run (the progress watch and the launch both use it).
    const base = runBase(this.settings.logs, req.cloud, req.attempt, req.state);
    return this.track(req, spec, 0, runIdOf(req), ticksNow(), base, (entry) => this.spawnRun(req, spec, base, entry));
  }

  /**
   * Registers the run as live before it starts, and forgets it once it has ended. Its progress
   * file is watched meanwhile, and no longer once it has ended: no line of it is reported after
   * its result.
   */
  private track(
    req: OperationRequest,
    spec: StateSpec,
    pgid: number,
    runId: string,
    since: number,
    base: string,
    start: (entry: Live) => Promise<OperationResult>,
  ): Promise<OperationResult> {
    const cloud = req.cloud;
    const entry: Live = { pgid, leaderStart: null, graceMs: spec.killGraceMs, runId, since, done: Promise.resolve(), signal: req.signal };
    this.live.set(cloud, entry);
    // Started after `start`'s first steps, which remove an earlier strategy's files at this path.
    const running = start(entry);
    const onProgress = req.onProgress;
    const unwatch = onProgress ? watchProgress(`${base}.progress`, onProgress) : null;
    const done = running.finally(() => {
      unwatch?.();
      if (this.live.get(cloud) === entry) this.live.delete(cloud);
    });
    entry.done = done;
    return done;
  }

  private async spawnRun(req: OperationRequest, spec: StateSpec, base: string, live: Live): Promise<OperationResult> {
    const dir = path.dirname(base);
    let created = this.dirs.get(dir);
    if (created === undefined) {
      created = fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR }) !== undefined;
      this.dirs.set(dir, created);
    }
    const runId = runIdOf(req);
    // Left by an earlier strategy that used the same folder (but a claim on this run: files.ts).
    if (!created) clearEarlierRun(base, runId);
    const values = runValues(req, this.settings);
    const argv = runArgv(spec, values);
    const env = runEnv(req, spec, values, { base, runId }, this.settings);
    const cwd = runCwd(spec, values);
    // The timeout counts from here, whatever becomes of the launcher (SPEC §7.2).
    const deadline = Date.now() + spec.timeoutMs;
    const since = ticksNow();

    const run = this.launcher.launch({
      file: argv[0],
      args: argv.slice(1),
      cwd,
      env,
      base,
      reason: spec.reason,
      killAfterMs: spec.timeoutMs + spec.killGraceMs + BACKSTOP_MS,
      graceMs: spec.killGraceMs,
    });
    const started = await run.started;
    if ('error' in started && !started.lost) return { kind: 'failed', reason: `cannot start: ${started.error}` };
    if ('error' in started) {
      // The launcher died before it said whether the run started: its claim file, or the run's
      // own processes (found by DCM_RUN_ID), tell. A run whose pid can be found is never "not started".
      return this.waitLeft(req, spec, { base, runId, since, deadline, proc: null }, live);
    }
    const pid = started.pid;
    live.pgid = pid;
    live.leaderStart = started.start;
    req.onStarted?.({ pid, pgid: pid, procStart: started.start });
    const run0 = { base, runId, since: started.start ?? since, deadline, proc: { pid, pgid: pid, procStart: started.start } };

    let timedOut = false;
    let stopped = false;
    let killing: Promise<void> | null = null;
    const kill = () => (killing ??= killRun(pid, runId, run0.since, spec.killGraceMs));
    const dueMono = performance.now() + spec.timeoutMs;
    const timer = setLongTimeout(() => {
      // The command may have ended while this process could not listen (a busy file held the
      // event loop): its exit, already on its way, is heard first (setImmediate runs after the
      // pending I/O), and its wrapper's status says so. A state that ended is not timed out.
      // Fired well past its due, this process was stopped (SIGSTOP, a VM paused) with the run's
      // own: the run's wrapper, woken at the same moment, is let write the end it has first.
      const expire = () => setImmediate(() => {
        if (ended || readStatus(base, runId)) return;
        timedOut = true;
        void kill();
      });
      if (performance.now() - dueMono > LATE_TIMER_MS) setTimeout(expire, WOKEN_GRACE_MS);
      else expire();
    }, spec.timeoutMs);
    const onAbort = () => {
      stopped = true;
      void kill();
    };
    req.signal.addEventListener('abort', onAbort, { once: true });
    let end: Exited;
    let ended = false;
    try {
      end = await run.exited;
      ended = true;
    } finally {
      timer.clear();
      req.signal.removeEventListener('abort', onAbort);
    }
    if (end.lost && !stopped && !timedOut) {
      // The launcher died while the run went on: it is waited for as an adopted run is, with the
      // same deadline; its wrapper writes the status.
      return this.waitLeft(req, spec, run0, live);
    }
    // The wrapper is gone; what it left running (in its group, or escaped from it) goes too, and
    // the subcloud keeps its slot until every process of the run is gone. A wrapper that said it was
    // left alone (the run's subreaper with no child: native/dcm-run.c) left nothing to look for.
    if (killing) await killing;
    else if (!end.alone) await cleanLeftovers(this.scans, pid, runId, run0.since, spec.killGraceMs);
    if (stopped) return { kind: 'failed', reason: 'interrupted' };
    // A wrapper that exited by itself exits with the code it wrote in `.status` (wrapper.ts): the
    // launcher's word is enough, and the file is read only when the wrapper was killed (it may
    // have written the status just before) or the run timed out.
    const status = end.code === null || timedOut ? readStatus(base, runId) : null;
    // A status written as the kill came: the command had ended by itself (a killed wrapper writes
    // none), so it is taken as it ended, never run again for a timeout it beat.
    if (timedOut && !(status && 'code' in status)) return this.failure(req, spec, `timed out after ${formatDuration(spec.timeoutMs)}`, 'timeout');
    if (status && 'code' in status) return this.outcome(req, spec, base, status.code);
    if (end.code === null) return this.failure(req, spec, `killed by ${end.signal ?? 'a signal'}`, 'failed');
    return this.outcome(req, spec, base, end.code);
  }

  /** How a run that ended with `code` ends the state. */
  private outcome(req: OperationRequest, spec: StateSpec, base: string | RunFacts, code: number): OperationResult {
    const facts = typeof base === 'string' ? fileFacts(base, spec.reason) : base;
    if (code !== 0 && (this.settings.config.deferExitCodes ?? [EX_TEMPFAIL]).includes(code)) {
      // "Not now": the step is deferred (domain/deferral.ts), never retried here nor failed.
      const line = facts.err() || facts.log();
      const reason = line ? `exit ${code}: ${line}` : `exit ${code}`;
      const max = DETAILS_LIMIT - req.state.length - 2;
      return { kind: 'defer', reason: reason.length > max ? `${reason.slice(0, max - 1)}…` : reason };
    }
    if (code !== 0) {
      // SPEC §7.2: the last non-empty line of stderr, else of stdout (the log holds both); with a
      // `reason` pattern, its last match in the log first (Ansible prints a failure's reason on
      // stdout, followed by the PLAY RECAP).
      const line = facts.match() || facts.err() || facts.log();
      // `fail_exit_codes`: refused (a wrong key): no retry mends it, the step fails at once.
      const retry = !(this.settings.config.failExitCodes ?? []).includes(code);
      return this.failure(req, spec, line ? `exit ${code}: ${line}` : `exit ${code}`, 'failed', retry);
    }
    const text = facts.next();
    if (text === null || text.trim() === '') return { kind: 'next' };
    const next = text.trim();
    if (next === 'complete' || req.states.indexOf(next) > req.stateIndex) return { kind: 'next', next };
    return this.failure(req, spec, `$DCM_NEXT names '${next.slice(0, 60)}', not a later state or complete`, 'failed', false);
  }

  private failure(req: OperationRequest, spec: StateSpec, reason: string, outcome: 'failed' | 'timeout', retry = true): OperationResult {
    const max = DETAILS_LIMIT - req.state.length - 2;
    const short = reason.length > max ? `${reason.slice(0, max - 1)}…` : reason;
    // `defer_on_timeout`: no answer in time is "not now", as exit 75 is (domain/deferral.ts).
    if (outcome === 'timeout' && this.settings.config.deferOnTimeout) return { kind: 'defer', reason: short };
    const failures = req.failures ?? 0;
    if (retry && failures < spec.retries) {
      const delayMs = Math.min(spec.backoffMaxMs, spec.backoffMinMs * 2 ** failures);
      return { kind: 'retry', reason: short, outcome, delayMs };
    }
    return { kind: 'failed', reason: short, timeout: outcome === 'timeout' };
  }

  adopt(left: LeftRun, req: OperationRequest): Adoption {
    const spec = this.specs.get(left.state);
    if (!spec) return { kind: 'interrupted' };
    const base = runBase(this.settings.logs, left.cloud, left.attempt, left.state);
    const runId = runIdOf(req);
    // No trace of the run at all: dcm stopped before its launcher started it. Claim it for nobody,
    // so that a launch message still on its way can never start it after all; it runs again.
    if (!left.proc && readStatus(base, runId) === null && !live(readClaim(base, runId)) && abandonRun(base, runId)) return { kind: 'interrupted' };
    const deadline = Date.parse(left.startedAt.replace(' ', 'T').slice(0, 23) + 'Z') + spec.timeoutMs;
    const run = { base, runId, since: left.proc?.procStart ?? 0, deadline, proc: left.proc };
    return { kind: 'wait', result: this.track(req, spec, left.proc?.pgid ?? 0, runId, run.since, base, (entry) => this.waitLeft(req, spec, run, entry)) };
  }

  remote(left: LeftRun, req: OperationRequest): RemoteRun {
    const spec = this.specs.get(left.state);
    return {
      key: runIdOf(req),
      // The launcher stops a run at its timeout and a grace (BACKSTOP_MS) with or without its
      // worker, then kills it after another grace: past that, it cannot be going.
      maxLeftMs: spec ? spec.timeoutMs + 2 * spec.killGraceMs + BACKSTOP_MS * 2 : 0,
      rerunAfterBound: spec?.rerunOnLostHost === true,
      outcome: async (end) => {
        if (!spec) return { kind: 'failed', reason: `no command for state ${left.state} in the exec config` };
        if (end.code !== null) return this.outcome(req, spec, storedFacts(end.facts), end.code);
        // Stopped by its own launcher as its host woke, its worker taken over meanwhile: why, as it wrote it.
        const stopped = stoppedWhy(end.facts);
        if (stopped) return { kind: 'retry', outcome: 'interrupted', reason: stopped.slice(0, DETAILS_LIMIT - left.state.length - 2), delayMs: 0 };
        return { kind: 'retry', outcome: 'interrupted', reason: `the run was ended by ${end.signal ?? 'a signal'} on ${this.hostOf(left)}`, delayMs: 0 };
      },
    };
  }

  private hostOf(left: LeftRun): string {
    return left.host ?? 'its host';
  }

  /** A run found ended by its status file (adopted): it ended when its wrapper wrote it. */
  private fromStatus(req: OperationRequest, spec: StateSpec, base: string, status: RunStatus): OperationResult {
    const endedAtMs = statusTimeMs(base) ?? undefined;
    if ('code' in status) return { ...this.outcome(req, spec, base, status.code), endedAtMs };
    return { kind: 'retry', outcome: 'interrupted', reason: `the run was ended by ${status.signal}`, delayMs: 0, endedAtMs };
  }

  /**
   * A run this process cannot hear from (started by an earlier dcm, or by a launcher that died):
   * its end is learnt from its files and its processes. The wrapper writes the status as its last
   * act, so a status means the command has ended; its leftovers are cleaned before the answer, as
   * a live dcm cleans them. Its timeout still counts. A run gone with no status (killed with its
   * wrapper) runs again, as the next attempt.
   */
  private async waitLeft(req: OperationRequest, spec: StateSpec, run: LeftProcess, entry: { pgid: number }): Promise<OperationResult> {
    const { base, runId, since, deadline } = run;
    // Its processes are those that carry its tag: a pid recorded earlier (in the history, in the
    // claim) may name an unrelated process by now, and is never signalled on its own word.
    const tagged = () => processesWithEnv('DCM_RUN_ID', new Set([runId]), since).get(runId) ?? [];
    let every = 10;
    let undecided = 0; // looks in a row with nothing alive and nothing settled (below)
    for (;;) {
      const claim = readClaim(base, runId);
      // Read before the processes: a wrapper that had taken the run was already tagged then.
      const taken = readTaken(base, runId);
      const procs = tagged();
      const leader = run.proc?.pgid ?? (claim && 'pid' in claim ? claim.pid : 0);
      entry.pgid = 0;
      const status = readStatus(base, runId);
      // The wrapper writes the status as its last act: while it is still among the run's
      // processes, the status is only being written.
      if (status && !(leader > 0 && procs.includes(leader))) {
        if (procs.length) await terminateTagged(tagged, spec.killGraceMs);
        return this.fromStatus(req, spec, base, status);
      }
      const alive = procs.length > 0;
      if (alive && (req.signal.aborted || Date.now() >= deadline)) {
        await terminateTagged(tagged, spec.killGraceMs);
        if (req.signal.aborted) return { kind: 'failed', reason: 'interrupted' };
        // As for a live run: a status written as the kill came means it had ended by itself.
        const beat = readStatus(base, runId);
        if (beat && 'code' in beat) return this.fromStatus(req, spec, base, beat);
        return this.failure(req, spec, `timed out after ${formatDuration(spec.timeoutMs)}`, 'timeout');
      }
      if (!alive) {
        if (taken && 'byWrapper' in taken) {
          // It ran and is gone with no status: killed with its wrapper. It runs again.
          const last = readStatus(base, runId);
          if (last) return this.fromStatus(req, spec, base, last);
          return { kind: 'retry', outcome: 'interrupted', reason: 'the run ended without recording its exit status', delayMs: 0 };
        }
        // Not started, as far as can be seen; a launcher (or a child of one between fork and exec)
        // may still be on its way. Taking the run for nobody settles it: the launcher refuses a
        // run whose claim exists, the wrapper one whose `.run` exists. If either got there first,
        // look again: it has started after all.
        const settled = (claim !== null || abandonRun(base, runId)) && abandonStart(base, runId);
        if (settled) {
          if (req.signal.aborted) return { kind: 'failed', reason: 'interrupted' };
          return { kind: 'retry', outcome: 'interrupted', reason: 'the run was never started (its launcher stopped first)', delayMs: 0 };
        }
        // `.run` taken but empty (its taker, wrapper or dcm, killed between creating and writing
        // it) or another strategy's. A live wrapper is tagged: with nothing alive for a while, the
        // command never started or died with its wrapper; it goes again, never waited for forever.
        if (++undecided >= UNDECIDED_LOOKS) {
          if (req.signal.aborted) return { kind: 'failed', reason: 'interrupted' };
          return { kind: 'retry', outcome: 'interrupted', reason: 'nothing of the run is left and it wrote no exit status', delayMs: 0 };
        }
      } else {
        undecided = 0;
      }
      await sleep(every);
      every = Math.min(every * 2, 200);
    }
  }

  async close(opts: { leaveRunning?: boolean } = {}): Promise<void> {
    this.closing = true;
    const audits = [...this.audits.entries()];
    for (const [stop] of audits) stop.abort();
    await Promise.all(audits.map(([, p]) => p));
    // Left to the worker that adopted them: they go on, their launcher with them.
    const pending = [...this.live.values()].filter((l) => !opts.leaveRunning || l.signal.aborted);
    // By their tag only: an adopted run's recorded group id may not be the run's any more.
    await Promise.all(
      pending.map((l) => terminateTagged(() => processesWithEnv('DCM_RUN_ID', new Set([l.runId]), l.since).get(l.runId) ?? [], l.graceMs)),
    );
    await Promise.all(pending.map((l) => l.done.catch(() => undefined)));
    await this.launcher.close({ leaveRunning: opts.leaveRunning === true && this.live.size > 0 });
  }
}
