/**
 * dcm's side of the launcher (./launcher.ts): started as the apply begins (or on the first run),
 * fed one line per run, answering when each run has started and when it has exited. If the
 * launcher itself dies, every run it had is reported `lost`: its status will never be written, so
 * its end is learnt from its process group instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setLongTimeout, type Timer } from '../../platform/timers.js';
import { NATIVE_WRAPPER } from './wrapper.js';
import type { PgParams } from '../../platform/pg-params.js';

export interface LaunchRequest {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** The run's files: `<base>.log`, `.pid`, `.status`. */
  base: string;
  /** The state's `reason` pattern, for the run's facts the launcher writes to a server's store. */
  reason?: string;
  /** The launcher stops the run once it has run this long (the timeout's backstop), KILL after `graceMs`. */
  killAfterMs?: number;
  graceMs?: number;
}

/**
 * A server's store the launcher claims runs in and writes their ends to (several hosts), and this
 * host's name. The server's parameters as dcm resolved them, password included: the launcher reads
 * no password of its own (its environment, as the runs', holds no PGPASSWORD).
 */
export interface EndStore {
  params: PgParams;
  host: string;
  /**
   * The worker's lease (several hosts): a launcher frozen longer than this asks, as it wakes,
   * whether the worker was taken over meanwhile, and stops its runs if so (launcher.ts).
   */
  leaseMs?: number;
}

/** `lost`: the launcher died before it said; the run may have started all the same. */
export type Started = { pid: number; start: number | null } | { error: string; lost?: boolean };
/**
 * `alone`: the wrapper said nothing of the run was left as the command ended (files.ts
 * readStatus): no leftovers to look for.
 */
export type Exited = { code: number | null; signal: string | null; lost?: boolean; alone?: boolean };

interface Pending {
  started: (s: Started) => void;
  exited: (e: Exited) => void;
}

const LAUNCHER = fileURLToPath(new URL('./launcher.js', import.meta.url));

export class Launcher {
  private child: ChildProcess | null = null;
  private exitedPromise: Promise<void> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /**
   * Launch lines not written yet: those asked in one go (the orchestrator starts a turn's runs
   * together) are written at once, one system call and one wake-up of the launcher for them all
   * rather than one a run. Written before this tick ends, to the launcher they were meant for.
   */
  private outbox = '';

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly store: EndStore | null = null,
  ) {}

  /** Runs asked of a launcher so far (for the cost counters). */
  get launched(): number {
    return this.nextId - 1;
  }

  /**
   * Start the launcher now, before any run is asked: its start-up (a Node process, 80 ms here)
   * then overlaps the orchestrator's own, instead of holding back the first runs. The sleep shape
   * of BENCHMARKS figure 6s: its first 50 runs began 35 ms sooner.
   */
  warm(): void {
    this.ensure();
  }

  private ensure(): ChildProcess {
    if (this.child) return this.child;
    // Its own process group: a Ctrl-C at the terminal reaches dcm only, and a kill -9 of dcm
    // leaves it running to record how the runs end. It holds none of dcm's own stdio: it may
    // outlive dcm, and whoever reads dcm's output must see its end when dcm ends.
    // The run wrapper is chosen here, where DCM_RUN_WRAPPER can be read (wrapper.ts).
    const args = NATIVE_WRAPPER ? [LAUNCHER] : [LAUNCHER, '--sh'];
    const child = spawn(process.execPath, args, { detached: true, stdio: ['pipe', 'pipe', 'ignore'], env: this.env });
    this.child = child;
    let ended!: () => void;
    this.exitedPromise = new Promise<void>((resolve) => (ended = resolve));
    // The next run starts a new launcher; the runs this one had are settled here.
    const gone = (started: Started, exited: Exited) => {
      if (this.child === child) {
        this.child = null;
        this.outbox = '';
      }
      for (const p of this.pending.values()) {
        p.started(started);
        p.exited(exited);
      }
      this.pending.clear();
      ended();
    };
    // It died: its runs are lost to it (they may have started).
    child.once('exit', () => gone({ error: 'the launcher stopped', lost: true }, { code: null, signal: null, lost: true }));
    child.once('error', (err) => {
      // It never started (node's binary removed or replaced under dcm, no process or file
      // descriptor left): 'exit' never comes, and no run was started by it, so each is refused.
      if (child.pid === undefined) gone({ error: `the launcher could not be started: ${err.message}` }, { code: null, signal: null });
    });
    child.stdin?.on('error', () => {
      // The launcher is gone: its exit handler reports every pending run lost.
    });
    if (child.stdout) readline.createInterface({ input: child.stdout }).on('line', (line) => this.answer(line));
    // Through its input, never its argv or environment: the parameters hold the password.
    if (this.store) child.stdin?.write(`${JSON.stringify({ store: this.store })}\n`);
    return child;
  }

  private answer(line: string): void {
    const msg = JSON.parse(line) as { id: number; pid?: number; start?: number | null; code?: number | null; signal?: string | null; error?: string; alone?: true };
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.error !== undefined) {
      this.pending.delete(msg.id);
      p.started({ error: msg.error });
      p.exited({ code: null, signal: null });
    } else if (msg.pid !== undefined) {
      p.started({ pid: msg.pid, start: msg.start ?? null });
    } else {
      this.pending.delete(msg.id);
      p.exited({ code: msg.code ?? null, signal: msg.signal ?? null, ...(msg.alone ? { alone: true } : {}) });
    }
  }

  launch(req: LaunchRequest): { started: Promise<Started>; exited: Promise<Exited> } {
    const child = this.ensure();
    const id = this.nextId++;
    let pending!: Pending;
    const started = new Promise<Started>((resolve) => (pending = { started: resolve, exited: () => {} }));
    const exited = new Promise<Exited>((resolve) => (pending.exited = resolve));
    this.pending.set(id, pending);
    if (!this.outbox) process.nextTick(() => this.flush(child));
    this.outbox += `${JSON.stringify({ id, ...req })}\n`;
    return { started, exited };
  }

  private flush(child: ChildProcess): void {
    const text = this.outbox;
    this.outbox = '';
    if (text && this.child === child) child.stdin?.write(text);
  }

  /**
   * Once no run is left: the launcher exits when its input ends; wait for it (bounded). With runs
   * left going (`leaveRunning`: the worker was taken over, its runs are the taker's to wait for)
   * it is let go on with them: it tells the store how each ends, and exits after the last.
   */
  async close(opts: { leaveRunning?: boolean } = {}): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.flush(child);
    child.stdin?.end();
    if (opts.leaveRunning && this.pending.size > 0) {
      // Nothing of it keeps dcm alive: dcm exits, the launcher stays.
      child.stdout?.destroy();
      child.unref();
      return;
    }
    let timer: Timer | undefined;
    await Promise.race([this.exitedPromise, new Promise<void>((r) => (timer = setLongTimeout(r, 5000)))]);
    timer?.clear();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
