/**
 * The live view on a terminal: a few lines redrawn in place, at most 10 times a second, fitted to
 * the terminal's width. Redrawing is log-update's (it diffs frames and wraps them to the width);
 * notes and warnings go above the view and stay in the scrollback. The closing summary replaces the
 * view, so the final record (on stdout, printed after `summary`) never lands inside it.
 */
import type { Timer } from '../platform/timers.js';
import type { TimeSource } from '../platform/runtime.js';
import { createLogUpdate } from 'log-update';
import { ProgressTracker, type TrackerInputs } from './progress-tracker.js';
import { closingSummary, liveLines, withCounts } from './progress-view.js';
import type { ApplyInfo, Fleet, ProgressSink, Summary, TransitionEvent } from './progress.js';

/** 10 redraws a second at most (SPEC §4). */
export const REDRAW_MS = 100;

export class LiveProgress implements ProgressSink {
  private readonly tracker: ProgressTracker;
  private readonly log: ReturnType<typeof createLogUpdate>;
  private timer: Timer | null = null;
  private dirty = true;
  private broken = false;

  constructor(
    private readonly out: NodeJS.WriteStream,
    inputs: TrackerInputs,
    /** Wall-clock time for what is shown; the redraw's timer. */
    private readonly rt: TimeSource,
  ) {
    this.tracker = new ProgressTracker(inputs);
    this.log = createLogUpdate(out);
    out.on('error', () => {
      this.broken = true;
      this.stopTimer();
    });
  }

  private guard(fn: () => void): void {
    if (this.broken) return;
    try {
      fn();
    } catch {
      this.broken = true;
      this.stopTimer();
    }
  }

  private stopTimer(): void {
    this.timer?.clear();
    this.timer = null;
  }

  private draw(): void {
    if (!this.dirty) {
      // Nothing changed but the clock: the elapsed time and ETA still move, once a second.
      if (this.rt.clock.wall() - this.lastDraw < 1000) return;
    }
    this.dirty = false;
    this.lastDraw = this.rt.clock.wall();
    const width = this.out.columns || 80;
    this.guard(() => this.log(liveLines(this.tracker.snapshot(this.rt.clock.wall()), width).join('\n')));
  }

  private lastDraw = 0;

  begin(info: ApplyInfo): void {
    this.tracker.begin(info);
    this.draw();
    this.timer = this.rt.timers.every(() => this.draw(), REDRAW_MS).unref();
  }

  stageStarted(stage: number, window: number): void {
    this.tracker.stageStarted(stage, window);
    this.dirty = true;
  }

  paused(on: boolean): void {
    this.tracker.paused(on);
    this.dirty = true;
  }

  windowWait(group: string, text: string | null): void {
    this.tracker.windowWait(group, text);
    this.dirty = true;
  }

  rateChanged(stage: number, perMin: number | null): void {
    this.tracker.rateChanged(stage, perMin);
    this.dirty = true;
  }

  windowChanged(stage: number, window: number): void {
    this.tracker.windowChanged(stage, window);
    this.dirty = true;
  }

  fleet(f: Fleet): void {
    this.tracker.fleet(f);
    this.dirty = true;
  }

  initialAborted(): void {
    this.tracker.initialAborted();
    this.dirty = true;
  }

  transition(e: TransitionEvent): void {
    this.tracker.transition(e, this.rt.clock.wall());
    this.dirty = true;
  }

  details(cloud: string, text: string): void {
    this.tracker.details(cloud, text);
    this.dirty = true;
  }

  note(message: string): void {
    this.guard(() => this.log.persist(`dcm: ${message}`));
    this.dirty = true;
  }

  warn(message: string): void {
    this.note(message);
  }

  summary(s: Summary): void {
    this.stopTimer();
    this.guard(() => {
      // The last frame stays on screen as a record of the run, the summary under it. It is written
      // whole after the view is cleared, rather than as a patch of the previous frame.
      this.log.clear();
      this.log.done();
      const width = this.out.columns || 80;
      // The strategy's own end state: an ended one shows no ETA (nothing is left to estimate); one
      // left applying or paused by a signal has no one running it, so no time to give.
      // Its counts are the summary's, read from the store as the run ended: a worker that joined
      // others saw their steps end only at heartbeats (issue 49: `complete … 0/3 done, 3 in progress`).
      const last = withCounts({ ...this.tracker.snapshot(this.rt.clock.wall()), state: s.state, etaMs: null, etaOf: null }, s.counts);
      this.out.write(`${liveLines(last, width).join('\n')}\n${closingSummary(s)}`);
    });
  }
}
