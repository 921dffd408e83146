/**
 * cliff's pipeline for a command's result: its columns (views.ts), `--sort-column`, `-c`, the
 * `<none>` row of an empty list, then the formatter; colour for tables on a terminal.
 */
import { Chalk, type ChalkInstance } from 'chalk';
import { UsageError } from '../../domain/errors.js';
import { selectColumns, sortRows } from './columns.js';
import { renderCsv, renderJson, renderShell, renderValue, renderYaml } from './formats.js';
import type { OutputOptions } from './options.js';
import type { Table } from './result.js';
import { renderTable } from './table.js';
import { toTable, type Printable } from './views.js';

export { FORMATS, wantColor, type Format, type OutputOptions } from './options.js';

const STATE_COLUMNS = new Set(['state', 'outcome', 'sync', 'availability']);

function stateColorizer(chalk: ChalkInstance) {
  return (column: string, text: string): string => {
    if (!STATE_COLUMNS.has(column)) return text;
    if (['complete', 'ok', 'in-sync', 'online'].includes(text)) return chalk.green(text);
    if (['failed', 'timeout', 'out-of-sync', 'offline'].includes(text)) return chalk.red(text);
    if (['aborted', 'abort requested', 'aborting', 'interrupted', 'unknown'].includes(text)) return chalk.yellow(text);
    if (text === 'initial' || text === 'None' || text === '') return text;
    return chalk.cyan(text);
  };
}

/**
 * The table as it will be printed, or null when the command prints nothing. Throws a usage error
 * for what cannot be printed (an unknown -c, shell for a list), so that a write command checks
 * this before it commits.
 */
export function prepare(result: Printable, opts: Pick<OutputOptions, 'format' | 'columns' | 'sortColumns' | 'sortDescending'>): Table | null {
  const t = toTable(result, { columnsGiven: opts.columns.length > 0, columns: opts.columns });
  if (!t) return null;
  if (opts.format === 'shell' && t.kind === 'list') {
    throw new UsageError("argument -f/--format: invalid choice: 'shell' (choose from 'csv', 'json', 'table', 'value', 'yaml')");
  }
  const sorted = sortRows(t, opts.sortColumns ?? [], Boolean(opts.sortDescending));
  // dcmanager's client gives an empty list one row of <none>, which every formatter then prints.
  const filled: Table = sorted.kind === 'list' && sorted.rows.length === 0 ? { ...sorted, rows: [sorted.columns.map(() => '<none>')] } : sorted;
  return selectColumns(filled, opts.columns);
}

export function render(result: Printable, opts: OutputOptions): string {
  const t = prepare(result, opts);
  if (!t) return '';
  switch (opts.format) {
    case 'table':
      return renderTable(t, {
        maxWidth: opts.maxWidth ?? 0,
        fitWidth: Boolean(opts.fitWidth),
        terminalWidth: opts.terminalWidth,
        colorize: opts.color ? stateColorizer(new Chalk({ level: 1 })) : undefined,
      });
    case 'json':
      return renderJson(t, opts.noindent);
    case 'csv':
      return renderCsv(t, opts.quote ?? 'nonnumeric');
    case 'value':
      return renderValue(t);
    case 'yaml':
      return renderYaml(t);
    case 'shell':
      return renderShell(t, opts.prefix ?? '');
  }
}
