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
import type { Adoption, Driver, LeftRun, OperationRequest, OperationResult } from '../driver.js';
import type { ExecConfig, StateSpec } from './config.js';
import { abandonRun, lastLine, readClaim, readSmall, readStatus, removeQuietly, runBase, type RunStatus } from './files.js';
import { render, SUBCLOUD_FIELDS, TYPE_OPTION_KEYS } from './placeholders.js';
import { groupAlive, sameProcessAlive, terminateGroup, waitGroupGone } from './procs.js';
import { Launcher } from './launch.js';
import { setLongTimeout, sleep } from '../../platform/timers.js';
import { PRIVATE_DIR } from '../../platform/private.js';

/** Reasons and details are kept short: `<state>: <reason>` fits in 200 characters. */
const DETAILS_LIMIT = 200;

export interface ExecSettings {
  config: ExecConfig;
  logDir: string;
  dbPath: string;
  sysadminPassword?: string;
}

interface Live {
  pgid: number;
  graceMs: number;
  done: Promise<unknown>;
}

export class ExecDriver implements Driver {
  readonly ownsTimeouts = true;
  private readonly specs: Map<string, StateSpec>;
  /** Folders known to exist, and whether this process created them (then no stale file is there). */
  private readonly dirs = new Map<string, boolean>();
  /** Runs in flight, by subcloud: never two at once for one subcloud, whatever a caller does. */
  private readonly live = new Map<string, Live>();
  private closing = false;
  /** dcm's environment without its own DCM_* settings (DCM_DB of the shell, DCM_DEBUG…), made once. */
  private readonly baseEnv: NodeJS.ProcessEnv;
  private readonly launcher: Launcher;

  constructor(private readonly settings: ExecSettings) {
    this.specs = new Map(settings.config.states.map((s) => [s.state, s]));
    this.baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DCM_')));
    this.launcher = new Launcher(this.baseEnv);
  }

  private spec(state: string): StateSpec {
    const s = this.specs.get(state);
    if (!s) throw new Error(`the exec config has no command for state '${state}'`);
    return s;
  }

  run(req: OperationRequest): Promise<OperationResult> {
    if (this.closing) return Promise.resolve({ kind: 'failed', reason: 'the exec driver is closed' });
    if (this.live.has(req.cloud)) {
      return Promise.resolve({ kind: 'failed', reason: 'a run of this subcloud is still going: refusing a second one' });
    }
    const spec = this.spec(req.state);
    return this.track(req.cloud, spec, 0, (entry) => this.spawnRun(req, spec, entry));
  }

  /** Registers the run as live before it starts, and forgets it once it has ended. */
  private track(cloud: string, spec: StateSpec, pgid: number, start: (entry: Live) => Promise<OperationResult>): Promise<OperationResult> {
    const entry: Live = { pgid, graceMs: spec.killGraceMs, done: Promise.resolve() };
    this.live.set(cloud, entry);
    const done = start(entry).finally(() => {
      if (this.live.get(cloud) === entry) this.live.delete(cloud);
    });
    entry.done = done;
    return done;
  }

  private async spawnRun(req: OperationRequest, spec: StateSpec, live: Live): Promise<OperationResult> {
    const base = runBase(this.settings.logDir, req.cloud, req.attempt, req.state);
    const dir = path.dirname(base);
    let created = this.dirs.get(dir);
    if (created === undefined) {
      created = fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR }) !== undefined;
      this.dirs.set(dir, created);
    }
    if (!created) {
      // Left by an earlier strategy that used the same folder: they would tell a false story (and
      // a stale `.pid` would stop the launcher, which claims a run by creating it).
      removeQuietly(`${base}.status`);
      removeQuietly(`${base}.pid`);
      removeQuietly(`${base}.next`);
    }
    const values = this.values(req);
    const argv = Array.isArray(spec.run)
      ? spec.run.map((a) => render(a, values, false))
      : ['/bin/sh', '-c', render(spec.run, values, true)];
    const env = this.env(req, spec, values, base);
    const cwd = render(spec.cwd, values, false);

    const run = this.launcher.launch({ file: argv[0], args: argv.slice(1), cwd, env, base });
    const started = await run.started;
    if ('error' in started) return { kind: 'failed', reason: `cannot start: ${started.error}` };
    const pid = started.pid;
    live.pgid = pid;
    req.onStarted?.({ pid, pgid: pid, procStart: started.start });

    let timedOut = false;
    let stopped = false;
    let killing: Promise<boolean> | null = null;
    const kill = () => (killing ??= terminateGroup(pid, spec.killGraceMs));
    const timer = setLongTimeout(() => {
      timedOut = true;
      void kill();
    }, spec.timeoutMs);
    const onAbort = () => {
      stopped = true;
      void kill();
    };
    req.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const end = await run.exited;
      timer.clear();
      if (end.lost) {
        // The launcher died: no status will come; the run is over when its group is gone.
        while (!(await waitGroupGone(pid, 1000))) if (stopped || timedOut) break;
        if (killing) await killing;
        const status = readStatus(base);
        if (!stopped && !timedOut && status) return this.fromStatus(req, spec, base, status);
        if (!stopped && !timedOut) {
          return { kind: 'retry', outcome: 'interrupted', reason: 'the launcher stopped before the run ended', delayMs: 0 };
        }
      }
      // The wrapper is gone; anything it left running in its group (`sleep 1000 &`) goes too, and
      // the subcloud keeps its slot until every process of the group is gone.
      if (killing) await killing;
      else if (groupAlive(pid)) await kill();
      if (stopped) return { kind: 'failed', reason: 'interrupted' };
      if (timedOut) return this.failure(req, spec, `timed out after ${formatDuration(spec.timeoutMs)}`, 'timeout');
      if (end.code === null) return this.failure(req, spec, `killed by ${end.signal ?? 'a signal'}`, 'failed');
      const code = end.code;
      return this.outcome(req, spec, base, code);
    } finally {
      timer.clear();
      req.signal.removeEventListener('abort', onAbort);
    }
  }

  /** How a run that ended with `code` ends the state. */
  private outcome(req: OperationRequest, spec: StateSpec, base: string, code: number): OperationResult {
    if (code !== 0) {
      const line = lastLine(`${base}.log`);
      return this.failure(req, spec, line ? `exit ${code}: ${line}` : `exit ${code}`, 'failed');
    }
    const text = readSmall(`${base}.next`);
    if (text === null || text.trim() === '') return { kind: 'next' };
    const next = text.trim();
    if (next === 'complete' || req.states.indexOf(next) > req.stateIndex) return { kind: 'next', next };
    return this.failure(req, spec, `$DCM_NEXT names '${next.slice(0, 60)}', not a later state or complete`, 'failed', false);
  }

  private failure(req: OperationRequest, spec: StateSpec, reason: string, outcome: 'failed' | 'timeout', retry = true): OperationResult {
    const max = DETAILS_LIMIT - req.state.length - 2;
    const short = reason.length > max ? `${reason.slice(0, max - 1)}…` : reason;
    const failures = req.failures ?? 0;
    if (retry && failures < spec.retries) {
      const delayMs = Math.min(spec.backoffMaxMs, spec.backoffMinMs * 2 ** failures);
      return { kind: 'retry', reason: short, outcome, delayMs };
    }
    return { kind: 'failed', reason: short, timeout: outcome === 'timeout' };
  }

  private values(req: OperationRequest): Record<string, string> {
    const v: Record<string, string> = {
      cloud: req.cloud,
      state: req.state,
      type: req.type,
      attempt: String(req.attempt),
      stage: String(req.stage ?? ''),
      db: this.settings.dbPath,
    };
    for (const [name, key] of Object.entries(TYPE_OPTION_KEYS)) {
      const x = req.extra[key];
      v[name] = x === null || x === undefined ? '' : String(x);
    }
    for (const f of SUBCLOUD_FIELDS) v[f] = req.subcloud?.[f] ?? '';
    return v;
  }

  /** What a run's environment adds to the launcher's (which is dcm's without DCM_*). */
  private env(req: OperationRequest, spec: StateSpec, values: Record<string, string>, base: string): Record<string, string> {
    const log = `${base}.log`;
    const env: Record<string, string> = {};
    env.DCM_CLOUD = req.cloud;
    env.DCM_STATE = req.state;
    env.DCM_TYPE = req.type;
    env.DCM_ATTEMPT = String(req.attempt);
    env.DCM_STAGE = values.stage;
    env.DCM_DB = this.settings.dbPath;
    env.DCM_LOG = log;
    env.DCM_NEXT = `${base}.next`;
    if (req.resumed) env.DCM_RESUMED = '1';
    for (const [name, key] of Object.entries({ ...TYPE_OPTION_KEYS, ...TYPE_FLAGS })) {
      const x = req.extra[key];
      if (x !== null && x !== undefined) env[`DCM_ARG_${name.toUpperCase()}`] = String(x);
    }
    for (const [k, x] of Object.entries(req.options ?? {})) env[`DCM_OPT_${k.toUpperCase()}`] = String(x);
    if (this.settings.sysadminPassword) env.DCM_SYSADMIN_PASSWORD = this.settings.sysadminPassword;
    for (const [k, x] of Object.entries(spec.env)) env[k] = render(x, values, false);
    return env;
  }

  adopt(left: LeftRun, req: OperationRequest): Adoption {
    const spec = this.specs.get(left.state);
    if (!spec) return { kind: 'interrupted' };
    const base = runBase(this.settings.logDir, left.cloud, left.attempt, left.state);
    const status = readStatus(base);
    if (status) {
      const result = this.fromStatus(req, spec, base, status);
      return { kind: 'wait', result: this.track(left.cloud, spec, 0, async () => result) };
    }
    // No trace of the run at all: dcm stopped before its launcher started it. Claim it for nobody,
    // so that a launch message still on its way can never start it after all; it runs again.
    if (!left.proc && readClaim(base) === null && abandonRun(base)) return { kind: 'interrupted' };
    const deadline = Date.parse(left.startedAt) + spec.timeoutMs;
    const pgid = left.proc?.pgid ?? 0;
    return { kind: 'wait', result: this.track(left.cloud, spec, pgid, (entry) => this.waitAdopted(req, spec, base, left, entry, deadline)) };
  }

  private fromStatus(req: OperationRequest, spec: StateSpec, base: string, status: RunStatus): OperationResult {
    if ('code' in status) return this.outcome(req, spec, base, status.code);
    return { kind: 'retry', outcome: 'interrupted', reason: `the run was ended by ${status.signal}`, delayMs: 0 };
  }

  /**
   * A run started by an earlier dcm: not our child, so its end is learnt from its files and its
   * process group. Its launcher writes the status just after the run is gone: while that launcher
   * lives, a missing status is only late.
   */
  private async waitAdopted(
    req: OperationRequest,
    spec: StateSpec,
    base: string,
    left: LeftRun,
    entry: { pgid: number },
    deadline: number,
  ): Promise<OperationResult> {
    let every = 10;
    const since = Date.now();
    for (;;) {
      const status = readStatus(base);
      if (status) return this.fromStatus(req, spec, base, status);
      const claim = readClaim(base);
      const pgid = left.proc?.pgid ?? (claim && 'pid' in claim ? claim.pid : 0);
      const pid = left.proc?.pid ?? pgid;
      entry.pgid = pgid;
      const launcher = claim && 'launcher' in claim ? claim.launcher : claim && 'launching' in claim ? claim.launching : 0;
      const runAlive = pgid > 0 && (sameProcessAlive(pid, left.proc?.procStart ?? null) || groupAlive(pgid));
      // A claim created but not yet written names no launcher: give its writer a moment.
      const launcherAlive = launcher > 0 ? sameProcessAlive(launcher, null) : claim !== null && 'launching' in claim && Date.now() - since < 5000;
      if (runAlive && (req.signal.aborted || Date.now() >= deadline)) {
        await terminateGroup(pgid, spec.killGraceMs);
        if (req.signal.aborted) return { kind: 'failed', reason: 'interrupted' };
        return this.failure(req, spec, `timed out after ${formatDuration(spec.timeoutMs)}`, 'timeout');
      }
      if (!runAlive && !launcherAlive) {
        // Gone, and nobody left to record how: one last look, then it runs again.
        const last = readStatus(base);
        if (last) return this.fromStatus(req, spec, base, last);
        return { kind: 'retry', outcome: 'interrupted', reason: 'the run ended without recording its exit status', delayMs: 0 };
      }
      if (req.signal.aborted && !runAlive) return { kind: 'failed', reason: 'interrupted' };
      await sleep(every);
      every = Math.min(every * 2, 200);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const pending = [...this.live.values()];
    await Promise.all(pending.map((l) => (l.pgid ? terminateGroup(l.pgid, l.graceMs) : undefined)));
    await Promise.all(pending.map((l) => l.done.catch(() => undefined)));
    await this.launcher.close();
  }
}

/** Type options that are flags rather than placeholders, exported as DCM_ARG_* too. */
const TYPE_FLAGS: Record<string, string> = {
  for_install: 'for_install',
  for_sw_deploy: 'for_sw_deploy',
  snapshot: 'snapshot',
  rollback: 'rollback',
  delete: 'delete_option',
  cleanup: 'cleanup',
  with_prestage: 'with_prestage',
  kube_upgrade: 'kube_upgrade',
};
