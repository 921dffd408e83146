/** The bridge between commander actions and plain command functions. */
import type { Ctx } from '../commands/context.js';
import type { Printable } from './output/views.js';
import type { SecretIo } from './secret.js';

/** A command's answer: what to print, and the exit code when it is not 0. */
export interface Outcome {
  result?: Printable;
  /** Text printed as it is (a completion script), instead of a rendered result. */
  text?: string;
  exitCode?: number;
  /** Said on stderr (`warning: …`) once the command has succeeded. */
  warnings?: string[];
  /** A `--watch` command: draws frames until it returns its exit code (cli/watch.ts). */
  watch?: (emit: (r: Printable) => Promise<boolean>) => Promise<number>;
}

export interface RunCtx extends Ctx {
  quiet: boolean;
  /**
   * dcmanager's confirmation of a high-risk command (apply, delete): with CLI_CONFIRMATIONS=enabled
   * and no `--yes`, ask on a terminal, refuse off one.
   */
  confirm: (yes: boolean | undefined) => Promise<void>;
  /** Where a secret is asked for (the sysadmin password): stdin when it is a terminal, and stderr. */
  secretIo?: SecretIo;
}

export type Runner = (fn: (ctx: RunCtx) => Promise<Printable | Outcome>) => Promise<void>;
