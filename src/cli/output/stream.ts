/**
 * Long lists streamed to their output (cliff's formats, row by row): the same bytes render.ts
 * prints for the gathered rows, pinned by the same golden files.
 */
import { selectColumns } from './columns.js';
import { csvLine, valueLine } from './formats.js';
import type { OutputOptions } from './options.js';
import { pyJsonArrayParts, pyJsonRowWriter } from './pyjson.js';
import { pyYamlListWriter } from './pyyaml.js';
import type { Value } from './result.js';
import { toLazyList, type LazyList, type Printable } from './views.js';

/** Output is handed to stdout in pieces of about this size: few writes, little held at once. */
const CHUNK = 64 * 1024;

/**
 * The output in pieces, for a list read as it is printed (a RowStream) in json, csv, value or
 * yaml: written row by row, nothing holds every row or the whole text. Null for anything else:
 * a table (its columns are as wide as their widest cell, which takes every row) and
 * `--sort-column` (which takes every row) gather the rows, through render.ts. This module loads
 * neither the table layout nor chalk.
 */
export function streamChunks(result: Printable, opts: OutputOptions): AsyncIterable<string> | null {
  const streamable = opts.format !== 'table' && opts.format !== 'shell' && !opts.sortColumns?.length;
  const lazy = streamable ? toLazyList(result, { columnsGiven: opts.columns.length > 0, columns: opts.columns }) : null;
  return lazy ? chunks(lazy, opts) : null;
}

async function* chunks(lazy: LazyList, opts: OutputOptions): AsyncGenerator<string, void, undefined> {
  let buf = '';
  for await (const piece of streamPieces(lazy, opts)) {
    buf += piece;
    if (buf.length >= CHUNK) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

async function* streamPieces(lazy: LazyList, opts: OutputOptions): AsyncGenerator<string, void, undefined> {
  // -c first: an unknown column is refused before a row is read or a byte written.
  const columns = selectColumns({ kind: 'list', columns: lazy.columns, rows: [] }, opts.columns) as { columns: string[] };
  const keep = columns.columns.map((c) => lazy.columns.indexOf(c));
  const pick = opts.columns.length ? (r: Value[]) => keep.map((i) => r[i]) : (r: Value[]) => r;
  const it = lazy.rows[Symbol.asyncIterator]();
  try {
    const first = await it.next();
    // dcmanager's client gives an empty list one row of <none>, which every formatter then prints.
    const rows: AsyncIterator<Value[]> =
      first.done === true
        ? (async function* () {
            yield columns.columns.map(() => '<none>' as Value);
          })()
        : (async function* () {
            for (let r: IteratorResult<Value[]> = first; r.done !== true; r = await it.next()) yield pick(r.value);
          })();
    const record = (r: Value[]): [string, Value][] => columns.columns.map((c, i) => [c, r[i]]);
    switch (opts.format) {
      case 'json': {
        const p = pyJsonArrayParts(opts.noindent);
        const item = pyJsonRowWriter(columns.columns, opts.noindent);
        yield p.open;
        for (let r = await rows.next(), first = true; !r.done; r = await rows.next(), first = false) yield (first ? '' : p.sep) + item(r.value);
        yield p.close;
        return;
      }
      case 'yaml': {
        const w = pyYamlListWriter();
        for (let r = await rows.next(); !r.done; r = await rows.next()) yield w.item(record(r.value));
        yield w.close;
        return;
      }
      case 'csv': {
        const quote = opts.quote ?? 'nonnumeric';
        yield csvLine(columns.columns, quote);
        for (let r = await rows.next(); !r.done; r = await rows.next()) yield csvLine(r.value, quote);
        return;
      }
      default:
        for (let r = await rows.next(); !r.done; r = await rows.next()) yield valueLine(r.value);
    }
  } finally {
    // A reader that stopped early (a closed pipe) lets go of the file at once.
    await it.return?.();
  }
}
