/**
 * Progress for people and scripts, kept apart from the orchestrator: it reports events (what it
 * starts, each committed step transition, the end) and never knows how they are shown. The sinks
 * live beside this file: plain lines off a terminal (this file), a live view on one
 * (progress-live.ts); `makeProgress` (progress-choose.ts) picks one.
 */
import { formatTimestamp } from '../domain/time.js';
import type { StartRate } from '../domain/start-rate.js';
import type { Timer } from '../platform/timers.js';
import type { TimeSource } from '../platform/runtime.js';
import { ProgressTracker, type TrackerInputs } from './progress-tracker.js';
import { closingSummary, periodicLine } from './progress-view.js';

export interface TransitionEvent {
  at: string;
  cloud: string;
  from: string;
  to: string;
  details: string;
  /** The attempt of the operation that starts with this transition, if one does. */
  attempt?: number;
  /** The step's stage. */
  stage?: number;
  /** How long the operation this transition closes ran (absent for a subcloud's first state). */
  durationMs?: number;
  /** The step ended with this transition (complete, failed, aborted). */
  ended?: boolean;
}

/** What an apply is about to run: sent once, before the first transition. */
export interface ApplyInfo {
  type: string;
  states: readonly string[];
  /** Every stage with its window and its steps' states as the run starts. */
  stages: { stage: number; window: number; counts: Record<string, number> }[];
  /** When this process started running the strategy (epoch ms). */
  startedMs: number;
  /**
   * When the strategy's first step started, in an earlier process if this one resumes it (epoch
   * ms): elapsed counts from it, as `strategy status` does, so a resume does not reset it.
   */
  firstStartedMs?: number;
  /** Every state operation's timeout. */
  stateTimeoutMs: number;
}

/** What the other workers of a strategy do, as a worker's heartbeat reads it from the store. */
export interface Fleet {
  /** Live workers, this one included. */
  workers: number;
  /** Steps in flight with the other workers. */
  inFlightElsewhere: number;
  /** Every step's stage and state, counted: the other workers' transitions reach no view here. */
  counts: { stage: number; state: string; n: number }[];
}

export interface Summary {
  state: string;
  counts: Record<string, number>;
  /** How long this process ran the strategy. */
  durationMs: number;
  /** Since the strategy's first step started, when that was before this process (a resume). */
  sinceFirstStartMs?: number;
  peakInFlight: number;
  maxWindow: number;
  /** One of several workers: the most of the window this worker took (maxWindow is the stages'). */
  shareOfWindow?: number;
  /** The first failed steps (cloud, details), and how many failed in all. */
  failures?: { cloud: string; details: string }[];
  failedTotal?: number;
  /** Steps complete whose audit disagreed (issue 49), the first of them; and whether that exits 0 all the same. */
  auditWarnings?: { count: number; first: { cloud: string; details: string }[] };
  auditOk?: boolean;
}

export interface ProgressSink {
  /** The run's shape (optional for sinks that need none). */
  begin?(info: ApplyInfo): void;
  /** A stage's window opens: its subclouds may start. */
  stageStarted?(stage: number, window: number): void;
  /** Every step still `initial` became `aborted` (an abort). */
  initialAborted?(): void;
  /** The strategy was paused (true) or resumed (false) from another shell. */
  paused?(on: boolean): void;
  /** A stage's window was changed while it runs (`strategy update`). */
  windowChanged?(stage: number, window: number): void;
  /** The start rate in force of a stage changed (a ramp step, an update; null: none), with its options. */
  rateChanged?(stage: number, perMin: number | null, rate: StartRate | null): void;
  /** A group's subclouds wait for its maintenance window (`text`: the window and its opening), or no longer (null). */
  windowWait?(group: string, text: string | null): void;
  transition(e: TransitionEvent): void;
  /** One of several workers: every worker's steps as the store has them, and how many workers there are. */
  fleet?(f: Fleet): void;
  /** A run in flight reported how far it is: its step's details, now committed. */
  details?(cloud: string, text: string): void;
  /** Something worth knowing (a resume, an abort noticed); silenced by -q. */
  note(message: string): void;
  /** Something the user must see even with -q: a signal and what it does, a lost lock. */
  warn(message: string): void;
  summary(s: Summary): void;
}

/** How many failed subclouds the closing summary names; the rest are listed by a command. */
export const SUMMARY_FAILURES = 20;

export interface LineOptions {
  quiet: boolean;
  /** One line per transition instead of one per subcloud that ends. */
  verbose?: boolean;
  /** A summary line this often (ms); 0 for none. */
  intervalMs?: number;
  /** What the estimate starts from (statistics kept, the sim latency); none: the tracker's own. */
  inputs?: TrackerInputs;
}

/** Streams that have failed (a closed pipe), and those listened to: one listener a stream. */
const failedStreams = new WeakSet<object>();
const watchedStreams = new WeakSet<object>();

/**
 * One 'error' listener on a stream however many progress sinks write to it: a caller that runs
 * applies in its own process (the tests, an embedding) would otherwise add one to its stderr per
 * apply, and Node warns of a leak at the eleventh.
 */
function watchFailure(out: NodeJS.WritableStream): void {
  const e = out as NodeJS.EventEmitter;
  if (typeof e.on !== 'function' || watchedStreams.has(out)) return;
  watchedStreams.add(out);
  e.on('error', () => failedStreams.add(out));
}

/**
 * Off a terminal: one line per subcloud that ends (with `verbose`, per transition), a summary line
 * every `intervalMs`, and a closing summary. A stream that fails (a closed pipe) is dropped: the
 * progress stops, the strategy goes on.
 */
export class LineProgress implements ProgressSink {
  private readonly tracker: ProgressTracker;
  private timer: Timer | null = null;
  private broken = false;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly opts: LineOptions,
    /** Wall-clock time for what is shown; the timer of its summary line. */
    private readonly rt: TimeSource,
  ) {
    this.tracker = new ProgressTracker(this.opts.inputs);
    watchFailure(out);
  }

  private write(text: string): void {
    if (this.broken || failedStreams.has(this.out)) return;
    try {
      this.out.write(text);
    } catch {
      this.broken = true;
    }
  }

  begin(info: ApplyInfo): void {
    this.tracker.begin(info);
    const every = this.opts.intervalMs ?? 10_000;
    if (!this.opts.quiet && every > 0) {
      this.timer = this.rt.timers.every(() => {
        const now = this.rt.clock.wall();
        this.write(`${formatTimestamp(now * 1000)} ${periodicLine(this.tracker.snapshot(now))}\n`);
      }, every).unref();
    }
  }

  stageStarted(stage: number, window: number): void {
    this.tracker.stageStarted(stage, window);
  }

  paused(on: boolean): void {
    this.tracker.paused(on);
  }

  rateChanged(stage: number, perMin: number | null): void {
    this.tracker.rateChanged(stage, perMin);
  }

  windowChanged(stage: number, window: number): void {
    this.tracker.windowChanged(stage, window);
  }

  windowWait(group: string, text: string | null): void {
    this.tracker.windowWait(group, text);
  }

  fleet(f: Fleet): void {
    this.tracker.fleet(f);
  }

  initialAborted(): void {
    this.tracker.initialAborted();
  }

  transition(e: TransitionEvent): void {
    // -q shows neither counts nor an ETA: nothing to track.
    if (this.opts.quiet) return;
    this.tracker.transition(e, this.rt.clock.wall());
    if (e.from === e.to && e.attempt === undefined) {
      // A run that will be retried after its backoff: the details say why and when.
      if (this.opts.verbose) this.write(`${e.at} ${e.cloud}: ${e.details}\n`);
      return;
    }
    if (e.from === e.to) {
      // A step caught mid-state by the last process (or a retry): its operation runs again.
      if (this.opts.verbose) this.write(`${e.at} ${e.cloud}: ${e.to} again (attempt ${e.attempt ?? '?'})\n`);
      return;
    }
    // A deferral is said as a failure is, with why: a site that does not answer is news at 3 a.m.
    const why = e.details && (e.to === 'failed' || e.to === 'aborted' || e.to === 'deferred') ? ` (${e.details})` : '';
    if (this.opts.verbose) this.write(`${e.at} ${e.cloud}: ${e.from} -> ${e.to}${why}\n`);
    else if (e.to === 'complete' || e.to === 'failed' || e.to === 'aborted' || e.to === 'deferred') this.write(`${e.at} ${e.cloud}: ${e.to}${why}\n`);
  }

  /** With -v, each progress line a run reported (at most one a second per subcloud). */
  details(cloud: string, text: string): void {
    if (this.opts.quiet || !this.opts.verbose) return;
    this.write(`${formatTimestamp(this.rt.clock.wall() * 1000)} ${cloud}: ${text}\n`);
  }

  note(message: string): void {
    if (!this.opts.quiet) this.write(`dcm: ${message}\n`);
  }

  warn(message: string): void {
    this.write(`dcm: ${message}\n`);
  }

  summary(s: Summary): void {
    this.timer?.clear();
    this.timer = null;
    if (this.opts.quiet) return;
    this.write(closingSummary(s));
  }
}

/** Each stage's window and its steps' states as a run starts, for the progress views. */
export function stageCounts(rows: { stage: number; state: string; n: number }[], windows: Map<number, number>): ApplyInfo['stages'] {
  const out = new Map<number, ApplyInfo['stages'][number]>();
  for (const [stage, window] of windows) out.set(stage, { stage, window, counts: {} });
  for (const r of rows) {
    let e = out.get(r.stage);
    if (!e) out.set(r.stage, (e = { stage: r.stage, window: 1, counts: {} }));
    e.counts[r.state] = (e.counts[r.state] ?? 0) + r.n;
  }
  return [...out.values()].filter((e) => Object.keys(e.counts).length).sort((a, b) => a.stage - b.stage);
}
