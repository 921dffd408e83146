/** Picks the renderer for `-f`, applies `-c`, and decides colour for tables on a terminal. */
import { Chalk, type ChalkInstance } from 'chalk';
import { selectColumns } from './columns.js';
import { renderData } from './formats.js';
import type { Result } from './result.js';
import { renderTable } from './table.js';

import type { OutputOptions } from './options.js';

export { FORMATS, wantColor, type Format, type OutputOptions } from './options.js';

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
  if (opts.format !== 'table') return renderData(selected, opts.format, opts.noindent);
  return opts.color ? renderTable(selected, stateColorizer(new Chalk({ level: 1 }))) : renderTable(selected);
}
