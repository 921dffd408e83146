/** Output settings, kept light: the CLI reads them before it knows whether it will print at all. */
export const FORMATS = ['table', 'json', 'csv', 'value', 'yaml'] as const;
export type Format = (typeof FORMATS)[number];

export interface OutputOptions {
  format: Format;
  columns: string[];
  noindent: boolean;
  color: boolean;
}

/** Colour only on a TTY, never with --no-color, NO_COLOR or TERM=dumb (chalk 5 ignores NO_COLOR). */
export function wantColor(stream: { isTTY?: boolean }, noColorFlag: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  if (noColorFlag || !stream.isTTY) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return env.TERM !== 'dumb';
}
