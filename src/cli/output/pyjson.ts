/**
 * JSON exactly as Python's `json.dump` writes it (cliff's json formatter): non-ASCII escaped as
 * `\u00fc` (ensure_ascii), `indent=2` puts `,` at line ends, no indent uses `, ` and `: `.
 */
import type { Value } from './result.js';

/** Printable ASCII but `"` and `\`: written as it is. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

export function pyString(s: string): string {
  if (PLAIN.test(s)) return `"${s}"`;
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    // Python escapes everything outside ' '..'~' as \uXXXX (lower-case hex; a UTF-16 unit each,
    // so characters beyond the BMP come out as their surrogate pair, as in Python).
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += ch;
  }
  return out + '"';
}

function scalar(v: Value): string {
  if (v === null || v === undefined) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'number') return String(v);
  return pyString(v);
}

function object(rec: [string, Value][], indent: string | null, level: number): string {
  if (rec.length === 0) return '{}';
  if (indent === null) return '{' + rec.map(([k, v]) => `${pyString(k)}: ${scalar(v)}`).join(', ') + '}';
  const inner = '\n' + indent.repeat(level + 1);
  return '{' + rec.map(([k, v]) => `${inner}${pyString(k)}: ${scalar(v)}`).join(',') + '\n' + indent.repeat(level) + '}';
}

/** One record (a show command), keys in the given order. */
export function pyJsonObject(rec: [string, Value][], noindent: boolean): string {
  return object(rec, noindent ? null : '  ', 0) + '\n';
}

/** A list of records. */
export function pyJsonArray(recs: [string, Value][][], noindent: boolean): string {
  if (recs.length === 0) return '[]\n';
  if (noindent) return '[' + recs.map((r) => object(r, null, 0)).join(', ') + ']\n';
  return '[' + recs.map((r) => '\n  ' + object(r, '  ', 1)).join(',') + '\n]\n';
}

/**
 * The same array written a record at a time (a streamed list): `open`, then each record with
 * `item` (the first without `sep`), then `close`. Concatenated, exactly `pyJsonArray`'s text.
 */
export function pyJsonArrayParts(noindent: boolean): { open: string; sep: string; item: (rec: [string, Value][]) => string; close: string } {
  if (noindent) return { open: '[', sep: ', ', item: (r) => object(r, null, 0), close: ']\n' };
  return { open: '[', sep: ',', item: (r) => '\n  ' + object(r, '  ', 1), close: '\n]\n' };
}

/**
 * One record of a list as `pyJsonArrayParts().item` writes it, from a row of values in the order
 * of `columns`: the key parts are made once per list instead of once per row, which is most of
 * the cost of a long listing.
 */
export function pyJsonRowWriter(columns: readonly string[], noindent: boolean): (row: readonly Value[]) => string {
  if (columns.length === 0) return () => (noindent ? '{}' : '\n  {}');
  const keys = columns.map((c, i) => (noindent ? (i ? ', ' : '{') : i ? ',\n    ' : '\n  {\n    ') + pyString(c) + ': ');
  const end = noindent ? '}' : '\n  }';
  return (row) => {
    let out = '';
    for (let i = 0; i < keys.length; i++) out += keys[i] + scalar(row[i]);
    return out + end;
  };
}
