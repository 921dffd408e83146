/**
 * cliff's pipeline for a command's result: its columns (views.ts), `--sort-column`, `-c`, the
 * `<none>` row of an empty list, then the formatter; colour for tables on a terminal.
 */
import { Chalk, type ChalkInstance } from 'chalk';
import { UsageError } from '../../domain/errors.js';
import { selectColumns, sortRows } from './columns.js';
import { csvLine, renderCsv, renderJson, renderShell, renderValue, renderYaml, valueLine } from './formats.js';
import { pyJsonArrayParts } from './pyjson.js';
import { pyYamlListWriter } from './pyyaml.js';
import type { OutputOptions } from './options.js';
import type { Table } from './result.js';
import { renderTable } from './table.js';
import { toLazyList, toTable, type LazyList, type Printable } from './views.js';
import type { Value } from './result.js';

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
  const t = toTable(result, { columnsGiven: opts.columns.length > 0 });
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

/** Output is handed to stdout in pieces of about this size: few writes, little held at once. */
const CHUNK = 64 * 1024;

/**
 * The output in pieces, for a result that may be long. A list read as it is printed (a RowStream)
 * in json, csv, value or yaml is written row by row: nothing holds every row or the whole text.
 * A table (its columns are as wide as their widest cell, which takes every row) and
 * `--sort-column` (which takes every row) gather the rows first, as render() does.
 */
export function* renderChunks(result: Printable, opts: OutputOptions): Generator<string, void, undefined> {
  const streamable = opts.format !== 'table' && opts.format !== 'shell' && !opts.sortColumns?.length;
  const lazy = streamable ? toLazyList(result, { columnsGiven: opts.columns.length > 0 }) : null;
  if (!lazy) {
    const text = render(result, opts);
    if (text) yield text;
    return;
  }
  let buf = '';
  for (const piece of streamPieces(lazy, opts)) {
    buf += piece;
    if (buf.length >= CHUNK) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

function* streamPieces(lazy: LazyList, opts: OutputOptions): Generator<string, void, undefined> {
  // -c first: an unknown column is refused before a row is read or a byte written.
  const columns = selectColumns({ kind: 'list', columns: lazy.columns, rows: [] }, opts.columns) as { columns: string[] };
  const keep = columns.columns.map((c) => lazy.columns.indexOf(c));
  const pick = opts.columns.length ? (r: Value[]) => keep.map((i) => r[i]) : (r: Value[]) => r;
  const it = lazy.rows[Symbol.iterator]();
  try {
    let next = it.next();
    // dcmanager's client gives an empty list one row of <none>, which every formatter then prints.
    const rows: Iterator<Value[]> =
      next.done === true
        ? [columns.columns.map(() => '<none>' as Value)][Symbol.iterator]()
        : {
            next: () => {
              if (next.done === true) return next;
              const row = { done: false as const, value: pick(next.value) };
              next = it.next();
              return row;
            },
          };
    const record = (r: Value[]): [string, Value][] => columns.columns.map((c, i) => [c, r[i]]);
    switch (opts.format) {
      case 'json': {
        const p = pyJsonArrayParts(opts.noindent);
        yield p.open;
        for (let r = rows.next(), first = true; !r.done; r = rows.next(), first = false) yield (first ? '' : p.sep) + p.item(record(r.value));
        yield p.close;
        return;
      }
      case 'yaml': {
        const w = pyYamlListWriter();
        for (let r = rows.next(); !r.done; r = rows.next()) yield w.item(record(r.value));
        yield w.close;
        return;
      }
      case 'csv': {
        const quote = opts.quote ?? 'nonnumeric';
        yield csvLine(columns.columns, quote);
        for (let r = rows.next(); !r.done; r = rows.next()) yield csvLine(r.value, quote);
        return;
      }
      default:
        for (let r = rows.next(); !r.done; r = rows.next()) yield valueLine(r.value);
    }
  } finally {
    // A reader that stopped early (a closed pipe) lets go of the file at once.
    it.return?.();
  }
}
