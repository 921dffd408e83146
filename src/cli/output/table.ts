/**
 * dcmanager's table layout (cliff + prettytable): `+---+` borders, one rule under the header, no
 * rules between rows, one space of padding, text left-aligned, integers right-aligned in lists.
 */
import Table from 'cli-table3';
import type { Result, Value } from './result.js';

const CHARS = {
  top: '-',
  'top-mid': '+',
  'top-left': '+',
  'top-right': '+',
  bottom: '-',
  'bottom-mid': '+',
  'bottom-left': '+',
  'bottom-right': '+',
  left: '|',
  'left-mid': '+',
  mid: '-',
  'mid-mid': '+',
  right: '|',
  'right-mid': '+',
  middle: '|',
};

export function cellText(v: Value): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  return String(v);
}

export type Colorize = (column: string, text: string) => string;

export function renderTable(result: Result, colorize: Colorize = (_c, t) => t): string {
  const head = result.kind === 'list' ? result.columns : ['Field', 'Value'];
  let rows: Value[][];
  let aligns: ('left' | 'right')[];
  if (result.kind === 'list') {
    // An empty list prints one row of <none>, as dcmanager's client does.
    rows = result.rows.length ? result.rows : [result.columns.map(() => '<none>')];
    // cliff right-aligns a column whose first row holds an integer.
    aligns = result.columns.map((_, i) => (typeof rows[0][i] === 'number' ? 'right' : 'left'));
  } else {
    rows = result.fields.map((f, i) => [f, result.values[i]]);
    aligns = ['left', 'left'];
  }
  const table = new Table({
    head,
    chars: CHARS,
    colAligns: aligns,
    style: { head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1 },
  });
  for (const row of rows) {
    if (result.kind === 'list') {
      table.push(row.map((v, i) => colorize(result.columns[i], cellText(v))));
    } else {
      table.push([cellText(row[0]), colorize(String(row[0]), cellText(row[1]))]);
    }
  }
  return table.toString() + '\n';
}
