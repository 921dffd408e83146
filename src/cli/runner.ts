/** The bridge between commander actions and plain command functions. */
import type { RunCtx } from '../commands/context.js';
import type { Outcome, Printable } from '../commands/results.js';

// Defined where the commands (and the layers below the CLI) can see them; named here too for the
// callers that still import them from the runner.
export type { Outcome, RunCtx };

export type Runner = (fn: (ctx: RunCtx) => Promise<Printable | Outcome>) => Promise<void>;
