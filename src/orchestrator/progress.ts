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
  note(message: string): void;
  summary(s: Summary): void;
}

export class LineProgress implements ProgressSink {
  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly quiet: boolean,
  ) {}

  transition(e: TransitionEvent): void {
    if (this.quiet) return;
    const why = e.details && (e.to === 'failed' || e.to === 'aborted') ? ` (${e.details})` : '';
    this.out.write(`${e.at} ${e.cloud}: ${e.from} -> ${e.to}${why}\n`);
  }

  note(message: string): void {
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
