/**
 * Tables as cliff prints them through prettytable: `+---+` borders, one rule under the header, no
 * rules between rows, one space of padding; in a list each column (its header too) is aligned by
 * the type of its first row's value (integers right, the rest left); a show command prints a
 * left-aligned Field/Value table. Multi-line values take several lines; `--max-width` and
 * `--fit-width` shrink the widest columns and wrap their text as Python's textwrap does.
 *
 * The widths and the wrapping are cliff's and prettytable's rules, ported here; cli-table3 then
 * lays the cells out, with prettytable's border characters and its compact style (no rule between
 * rows). Every `test/golden/*.table.txt` and `*.max-width.txt` file, printed by cliff itself, pins
 * the bytes.
 */
import Table from 'cli-table3';
import stringWidth from 'string-width';
import type { Table as Result, Value } from './result.js';

export function cellText(v: Value): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  // cliff's _format_row: \r\n becomes \n, a lone \r a space.
  return String(v).replace(/\r\n/g, '\n').replace(/\r/g, ' ');
}

export type Colorize = (column: string, text: string) => string;

export interface TableOptions {
  /** `--max-width`: above 0, the width to fit in. */
  maxWidth: number;
  /** `--fit-width`: fit to the terminal (only when there is one). */
  fitWidth: boolean;
  /** The terminal's width, when stdout is one. */
  terminalWidth?: number;
  colorize?: Colorize;
}

/** Display width of one line; printable ASCII (nearly every cell) needs no lookup. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const lineWidth = (l: string): number => (PRINTABLE_ASCII.test(l) ? l.length : stringWidth(l));
const width = (s: string): number => (s.includes('\n') ? Math.max(0, ...s.split('\n').map(lineWidth)) : lineWidth(s));

// Python's textwrap word splitting (break_on_hyphens), with Unicode word characters.
const WS = '[\\t\\n\\x0b\\x0c\\r ]';
const NWS = '[^\\t\\n\\x0b\\x0c\\r ]';
const WP = "[\\p{L}\\p{N}_!\"'&.,?]";
const LT = '[\\p{L}_]';
const W = '[\\p{L}\\p{N}_]';
const WORDSEP = new RegExp(
  `(${WS}+|(?<=${WP})-{2,}(?=${W})|${NWS}+?(?:-(?:(?<=${LT}{2}-)|(?<=${LT}-${LT}-))(?=${LT}-?${LT})|(?=${WS}|$)|(?<=${WP})(?=-{2,}${W})))`,
  'u',
);

/** `textwrap.fill(line, width)`. */
export function textwrapFill(text: string, w: number): string {
  text = text.replace(/\t/g, '        ').replace(/[\n\x0b\x0c\r]/g, ' ');
  const chunks = text.split(WORDSEP).filter((c) => c);
  chunks.reverse();
  const lines: string[] = [];
  const blank = (s: string) => s.trim() === '';
  while (chunks.length) {
    const cur: string[] = [];
    let len = 0;
    if (blank(chunks[chunks.length - 1]) && lines.length) chunks.pop();
    while (chunks.length) {
      const l = chunks[chunks.length - 1].length;
      if (len + l <= w) {
        cur.push(chunks.pop()!);
        len += l;
      } else break;
    }
    if (chunks.length && chunks[chunks.length - 1].length > w) {
      const spaceLeft = w < 1 ? 1 : w - len;
      const chunk = chunks[chunks.length - 1];
      let end = spaceLeft;
      if (chunk.length > spaceLeft) {
        const hyphen = chunk.lastIndexOf('-', spaceLeft - 1);
        if (hyphen > 0 && /[^-]/.test(chunk.slice(0, hyphen))) end = hyphen + 1;
      }
      cur.push(chunk.slice(0, end));
      chunks[chunks.length - 1] = chunk.slice(end);
      len = cur.reduce((n, c) => n + c.length, 0);
    }
    if (cur.length && blank(cur[cur.length - 1])) cur.pop();
    if (cur.length) lines.push(cur.join(''));
  }
  return lines.join('\n');
}

/** cliff's _assign_max_widths: which columns shrink, and to what. */
function maxWidths(widths: number[], termWidth: number, minWidth: number): (number | undefined)[] {
  const tableWidth = widths.reduce((n, w) => n + w + 3, 1);
  const out: (number | undefined)[] = widths.map(() => undefined);
  if (tableWidth <= termWidth) return out;
  const usable = Math.max(0, termWidth - 1 - 3 * widths.length);
  const optimal = widths.length ? Math.max(0, Math.floor(usable / widths.length)) : 0;
  const shrink: number[] = [];
  let remaining = usable;
  widths.forEach((w, i) => (w <= optimal ? (remaining -= w) : shrink.push(i)));
  if (shrink.length === 0) return out;
  const to = Math.floor(remaining / shrink.length);
  for (const i of shrink.slice(0, -1)) {
    out[i] = Math.max(minWidth, to);
    remaining -= to;
  }
  out[shrink[shrink.length - 1]] = Math.max(minWidth, remaining);
  return out;
}

/** prettytable's borders: `+` at every corner and crossing, `-` across, `|` down. */
const CHARS = {
  top: '-', 'top-mid': '+', 'top-left': '+', 'top-right': '+',
  bottom: '-', 'bottom-mid': '+', 'bottom-left': '+', 'bottom-right': '+',
  left: '|', 'left-mid': '+', mid: '-', 'mid-mid': '+', right: '|', 'right-mid': '+', middle: '|',
};

export function renderTable(t: Result, opts: TableOptions = { maxWidth: 0, fitWidth: false }): string {
  const colorize = opts.colorize ?? ((_c: string, s: string) => s);
  let head: string[];
  let rows: string[][];
  let aligns: ('left' | 'right')[];
  let colorOf: (row: string[], i: number) => string;
  if (t.kind === 'list') {
    head = t.columns;
    rows = t.rows.map((r) => r.map(cellText));
    // cliff aligns each column by the Python type of the first row's value: int right, else left.
    aligns = t.columns.map((_, i) => (t.rows.length && typeof t.rows[0][i] === 'number' ? 'right' : 'left'));
    colorOf = (_row, i) => t.columns[i];
  } else {
    head = ['Field', 'Value'];
    rows = t.fields.map((f, i) => [f, cellText(t.values[i])]);
    aligns = ['left', 'left'];
    colorOf = (row, i) => (i === 1 ? row[0] : '');
  }
  let widths = head.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i]))));
  const term = opts.maxWidth > 0 ? opts.maxWidth : opts.fitWidth ? opts.terminalWidth : undefined;
  if (term) {
    const caps = maxWidths(widths, term, t.kind === 'list' ? 8 : 16);
    widths = head.map((h, i) => {
      const cap = caps[i];
      return cap === undefined ? widths[i] : Math.max(width(h), ...rows.map((r) => Math.min(width(r[i]), cap)));
    });
  }
  const wrapped = rows.map((row) =>
    row.map((v, i) => v.split('\n').map((l) => (lineWidth(l) > widths[i] ? textwrapFill(l, widths[i]) : l)).join('\n')),
  );
  // textwrap counts characters, not columns: a wrapped line of wide characters can be wider than
  // its column. prettytable lets it stick out past the border; cli-table3 would cut it short
  // (`…`), so the column takes the line's width instead and no text is lost.
  if (term) widths = widths.map((w, i) => Math.max(w, ...wrapped.map((r) => width(r[i]))));
  const table = new Table({
    head,
    chars: CHARS,
    // No colours of its own (cli-table3 colours headers and borders by default): cells come
    // coloured, one line at a time, by `colorize`.
    style: { head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1 },
    colAligns: aligns,
    colWidths: widths.map((w) => w + 2),
  });
  for (const [y, row] of wrapped.entries()) {
    table.push(row.map((v, i) => v.split('\n').map((l) => (l ? colorize(colorOf(rows[y], i), l) : l)).join('\n')));
  }
  return table.toString() + '\n';
}
