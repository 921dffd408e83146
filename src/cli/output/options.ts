/** Output settings, kept light: the CLI reads them before it knows whether it will print at all. */

/** cliff's formatters: `shell` prints a show command only; `csv` is a list format in cliff. */
export const FORMATS = ['table', 'json', 'csv', 'value', 'yaml', 'shell'] as const;
export type Format = (typeof FORMATS)[number];

/** csv's `--quote` modes, as cliff's. */
export const QUOTES = ['all', 'minimal', 'none', 'nonnumeric'] as const;
export type Quote = (typeof QUOTES)[number];

export interface OutputOptions {
  format: Format;
  columns: string[];
  noindent: boolean;
  color: boolean;
  // cliff's formatter options; unset means cliff's default.
  /** `-f shell --prefix P`. */
  prefix?: string;
  /** `--max-width N` (or $CLIFF_MAX_TERM_WIDTH): above 0, tables fit in N columns. */
  maxWidth?: number;
  /** `--fit-width` (or CLIFF_FIT_WIDTH=1): tables fit the terminal. */
  fitWidth?: boolean;
  terminalWidth?: number;
  printEmpty?: boolean;
  sortColumns?: string[];
  sortDescending?: boolean;
  quote?: Quote;
}

/** Colour only on a TTY, never with --no-color, NO_COLOR or TERM=dumb (chalk 5 ignores NO_COLOR). */
export function wantColor(stream: { isTTY?: boolean }, noColorFlag: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  if (noColorFlag || !stream.isTTY) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return env.TERM !== 'dumb';
}
