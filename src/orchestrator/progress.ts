/**
 * Progress for people and scripts, kept apart from the orchestrator so that another view (a live
 * terminal one) can replace it: one line per committed step transition, then a summary.
 */
import { formatDuration } from '../domain/durations.js';

export interface TransitionEvent {
  at: string;
  cloud: string;
  from: string;
  to: string;
  details: string;
  /** The attempt of the operation that starts with this transition, if one does. */
  attempt?: number;
}

export interface Summary {
  state: string;
  counts: Record<string, number>;
  durationMs: number;
  peakInFlight: number;
  maxWindow: number;
}

export interface ProgressSink {
  transition(e: TransitionEvent): void;
  /** Something worth knowing (a resume, an abort noticed); silenced by -q. */
  note(message: string): void;
  /** Something the user must see even with -q: a signal and what it does, a lost lock. */
  warn(message: string): void;
  summary(s: Summary): void;
}

export class LineProgress implements ProgressSink {
  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly quiet: boolean,
  ) {}

  transition(e: TransitionEvent): void {
    if (this.quiet) return;
    if (e.from === e.to && e.attempt === undefined) {
      // A run that will be retried after its backoff: the details say why and when.
      this.out.write(`${e.at} ${e.cloud}: ${e.details}\n`);
      return;
    }
    if (e.from === e.to) {
      // A step caught mid-state by the last process (or a retry): its operation runs again.
      this.out.write(`${e.at} ${e.cloud}: ${e.to} again (attempt ${e.attempt ?? '?'})\n`);
      return;
    }
    const why = e.details && (e.to === 'failed' || e.to === 'aborted') ? ` (${e.details})` : '';
    this.out.write(`${e.at} ${e.cloud}: ${e.from} -> ${e.to}${why}\n`);
  }

  note(message: string): void {
    if (!this.quiet) this.out.write(`dcm: ${message}\n`);
  }

  warn(message: string): void {
    this.out.write(`dcm: ${message}\n`);
  }

  summary(s: Summary): void {
    if (this.quiet) return;
    const order = ['complete', 'failed', 'aborted', 'initial'];
    const parts = [
      ...order.filter((k) => s.counts[k]).map((k) => `${s.counts[k]} ${k}`),
      ...Object.keys(s.counts)
        .filter((k) => !order.includes(k) && s.counts[k])
        .map((k) => `${s.counts[k]} ${k}`),
    ];
    this.out.write(
      `strategy ${s.state}: ${parts.join(', ') || 'no steps'} in ${formatDuration(s.durationMs)}` +
        ` (peak ${s.peakInFlight} subclouds in flight, window ${s.maxWindow})\n`,
    );
  }
}
