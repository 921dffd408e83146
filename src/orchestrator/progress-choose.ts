/**
 * Which progress an apply shows (SPEC §4 "Visibility"): the live view when stderr is a terminal
 * that can take it (not `TERM=dumb`, no `NO_COLOR`), plain lines otherwise, nothing but warnings
 * with -q.
 */
import { LineProgress } from './progress.js';
import { LiveProgress } from './progress-live.js';
import type { TrackerInputs } from './progress-tracker.js';
import type { ProgressSink } from './progress.js';
import type { TimeSource } from '../platform/runtime.js';

export interface ProgressChoice {
  quiet: boolean;
  verbose: boolean;
  intervalMs: number;
  inputs: TrackerInputs;
}

export function wantLiveView(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && env.TERM !== 'dumb' && env.NO_COLOR === undefined;
}

export function makeProgress(stream: NodeJS.WriteStream, c: ProgressChoice, rt: TimeSource): ProgressSink {
  // -v asks for every transition: lines, even on a terminal.
  if (!c.quiet && !c.verbose && wantLiveView(stream)) return new LiveProgress(stream, c.inputs, rt);
  return new LineProgress(stream, { quiet: c.quiet, verbose: c.verbose, intervalMs: c.intervalMs, inputs: c.inputs }, rt);
}
