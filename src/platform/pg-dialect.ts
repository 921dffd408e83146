/**
 * SQLite's SQL as dcm writes it, in PostgreSQL's words. The store's queries are written once, in
 * the SQL both understand where they can be; what only SQLite says is rewritten here, so that the
 * difference lives in one place and a new query that needs more fails loudly in the PostgreSQL
 * suite. What is rewritten:
 * - parameters: `?` and `@name` become `$1`, `$2`… (named ones in the order they first appear);
 * - scalar `max(a, b, …)` / `min(…)` (SQLite's, with two or more arguments) become GREATEST /
 *   LEAST; the aggregates, with one argument, stay;
 * - `group_concat(x, sep ORDER BY …)` becomes `string_agg`; `ifnull` becomes `coalesce`;
 * - `julianday(t)` (days, fractional) becomes the same number from the timestamp's epoch;
 * - `SELECT value FROM json_each(?)` (a JSON array of ids) becomes json_array_elements_text;
 * - `x IS ?` / `x IS NOT ?` (SQLite's null-safe comparison with a value) become IS [NOT] DISTINCT
 *   FROM, which is PostgreSQL's (its IS takes only NULL, TRUE and FALSE);
 * - a column alias with capitals (`AS stepId`) is quoted: PostgreSQL folds unquoted names to
 *   lower case, and the rows' keys would change.
 * String literals and quoted names are left as they are.
 */

export interface PgText {
  text: string;
  /** For `@name` parameters: the name of `$1`, `$2`…; empty for positional ones. */
  names: string[];
}

const cache = new Map<string, PgText>();

export function toPg(sqlite: string): PgText {
  let hit = cache.get(sqlite);
  if (!hit) cache.set(sqlite, (hit = translate(sqlite)));
  return hit;
}

function translate(sqlite: string): PgText {
  const names: string[] = [];
  let positional = 0;
  let text = sqlite.replace(/SELECT value FROM json_each\(\?\)/g, 'SELECT value::bigint FROM json_array_elements_text(?::json) AS value');
  text = mapOutsideQuotes(text, (chunk) =>
    chunk.replace(/\bIS\s+NOT\s+(?=\?|@)/gi, 'IS DISTINCT FROM ').replace(/\bIS\s+(?=\?|@)/gi, 'IS NOT DISTINCT FROM ').replace(/\bAS\s+([a-z][a-z0-9_]*[A-Z][A-Za-z0-9_]*)\b/g, 'AS "$1"').replace(/\?|@([A-Za-z_][A-Za-z0-9_]*)/g, (m, name: string | undefined) => {
      if (name === undefined) return `$${++positional}`;
      let i = names.indexOf(name);
      if (i < 0) i = names.push(name) - 1;
      return `$${i + 1}`;
    }),
  );
  if (positional > 0 && names.length > 0) throw new Error(`a query mixes ? and @name parameters: ${sqlite}`);
  text = rewriteCalls(text);
  return { text, names };
}

/** Apply `fn` to the parts of `text` outside '…' literals and "…" names. */
function mapOutsideQuotes(text: string, fn: (chunk: string) => string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const q = nextQuote(text, i);
    if (q < 0) {
      out += fn(text.slice(i));
      break;
    }
    out += fn(text.slice(i, q));
    const end = closingQuote(text, q);
    out += text.slice(q, end);
    i = end;
  }
  return out;
}

function nextQuote(text: string, from: number): number {
  for (let i = from; i < text.length; i++) if (text[i] === "'" || text[i] === '"') return i;
  return -1;
}

/** The index just past the quote that closes the one at `q` (a doubled quote is part of it). */
function closingQuote(text: string, q: number): number {
  const ch = text[q];
  let i = q + 1;
  while (i < text.length) {
    if (text[i] === ch) {
      if (text[i + 1] === ch) i += 2;
      else return i + 1;
    } else i++;
  }
  return text.length;
}

const CALL = /\b(max|min|group_concat|ifnull|julianday)\s*\(/gi;

function rewriteCalls(text: string): string {
  let out = '';
  let from = 0;
  CALL.lastIndex = 0;
  for (let m = CALL.exec(text); m; m = CALL.exec(text)) {
    if (insideQuotes(text, m.index)) continue;
    const open = m.index + m[0].length - 1;
    const close = matchingParen(text, open);
    const args = splitArgs(text.slice(open + 1, close)).map(rewriteCalls);
    const fn = m[1].toLowerCase();
    let call: string;
    if (fn === 'max' || fn === 'min') call = args.length > 1 ? `${fn === 'max' ? 'GREATEST' : 'LEAST'}(${args.join(',')})` : `${m[1]}(${args.join(',')})`;
    else if (fn === 'group_concat') call = `string_agg(${args.join(',')})`;
    else if (fn === 'ifnull') call = `coalesce(${args.join(',')})`;
    else call = `(EXTRACT(EPOCH FROM CAST(${args[0]} AS timestamp)) / 86400.0 + 2440587.5)`;
    out += text.slice(from, m.index) + call;
    from = close + 1;
    CALL.lastIndex = close + 1;
  }
  return out + text.slice(from);
}

function insideQuotes(text: string, at: number): boolean {
  let i = 0;
  while (i < at) {
    const q = nextQuote(text, i);
    if (q < 0 || q >= at) return false;
    const end = closingQuote(text, q);
    if (end > at) return true;
    i = end;
  }
  return false;
}

function matchingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const ch = text[i];
    if (ch === "'" || ch === '"') i = closingQuote(text, i) - 1;
    else if (ch === '(') depth++;
    else if (ch === ')' && --depth === 0) return i;
  }
  throw new Error(`unbalanced parentheses in: ${text}`);
}

/** Top-level comma-separated arguments (commas inside parentheses or quotes do not split). */
function splitArgs(inner: string): string[] {
  const args: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const ch = inner[i];
    if (ch === "'" || ch === '"') i = closingQuote(inner, i) - 1;
    else if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === ',' && depth === 0) {
      args.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  args.push(inner.slice(start));
  return args;
}
