/** The bridge between commander actions and plain command functions. */
import type { Ctx } from '../commands/context.js';
import type { Result } from './output/result.js';

/** A command's answer: what to print, and the exit code when it is not 0. */
export interface Outcome {
  result?: Result;
  /** Text printed as it is (a completion script), instead of a rendered result. */
  text?: string;
  exitCode?: number;
  /** A `--watch` command: draws frames until it returns its exit code (cli/watch.ts). */
  watch?: (emit: (r: Result) => Promise<void>) => Promise<number>;
}

export interface RunCtx extends Ctx {
  quiet: boolean;
}

export type Runner = (fn: (ctx: RunCtx) => Promise<Result | Outcome>) => Promise<void>;
