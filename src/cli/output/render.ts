/** Picks the renderer for `-f`, applies `-c`, and decides colour for tables on a terminal. */
import { Chalk, type ChalkInstance } from 'chalk';
import { selectColumns } from './columns.js';
import { renderCsv, renderJson, renderValue, renderYaml } from './formats.js';
import type { Result } from './result.js';
import { renderTable } from './table.js';

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

const STATE_COLUMNS = new Set(['state', 'outcome', 'sync', 'availability']);

function stateColorizer(chalk: ChalkInstance) {
  return (column: string, text: string): string => {
    if (!STATE_COLUMNS.has(column)) return text;
    if (['complete', 'ok', 'in-sync', 'online'].includes(text)) return chalk.green(text);
    if (['failed', 'timeout', 'out-of-sync', 'offline'].includes(text)) return chalk.red(text);
    if (['aborted', 'abort requested', 'aborting', 'interrupted', 'unknown'].includes(text)) return chalk.yellow(text);
    if (text === 'initial' || text === 'None') return text;
    return chalk.cyan(text);
  };
}

export function render(result: Result, opts: OutputOptions): string {
  const selected = selectColumns(result, opts.columns);
  switch (opts.format) {
    case 'json':
      return renderJson(selected, opts.noindent);
    case 'csv':
      return renderCsv(selected);
    case 'value':
      return renderValue(selected);
    case 'yaml':
      return renderYaml(selected);
    case 'table':
      return opts.color ? renderTable(selected, stateColorizer(new Chalk({ level: 1 }))) : renderTable(selected);
  }
}
