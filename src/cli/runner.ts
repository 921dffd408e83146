/** The bridge between commander actions and plain command functions. */
import type { RunCtx as CommandCtx } from '../commands/context.js';
import type { Outcome, Printable } from '../commands/results.js';
import type { SecretIo } from './secret.js';

// Defined where the commands (and the layers below the CLI) can see them; named here too for the
// callers that still import them from the runner.
export type { Outcome };

/** The commands' context, and what only the CLI hands its own code (a terminal to ask a secret on). */
export interface RunCtx extends CommandCtx {
  /** Where a secret is asked for (the sysadmin password): stdin when it is a terminal, and stderr. */
  secretIo?: SecretIo;
}

export type Runner = (fn: (ctx: RunCtx) => Promise<Printable | Outcome>) => Promise<void>;
