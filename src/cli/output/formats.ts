/** Machine formats as cliff writes them: json, csv, value, yaml, shell (SPEC §8). */
import { pyJsonArray, pyJsonObject } from './pyjson.js';
import { pyYamlFields, pyYamlList } from './pyyaml.js';
import type { Table, Value } from './result.js';
import type { Quote } from './options.js';


function records(t: Table): [string, Value][][] {
  if (t.kind === 'show') return [t.fields.map((f, i) => [f, t.values[i]])];
  return t.rows.map((r) => t.columns.map((c, i) => [c, r[i]]));
}

export function renderJson(t: Table, noindent: boolean): string {
  return t.kind === 'show' ? pyJsonObject(records(t)[0], noindent) : pyJsonArray(records(t), noindent);
}

export function renderYaml(t: Table): string {
  return t.kind === 'show' ? pyYamlFields(records(t)[0]) : pyYamlList(records(t));
}

/** Python's str(): None, True, False. */
export function pyStr(v: Value): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  return String(v);
}

/**
 * Python's csv.writer as cliff sets it up (escapechar `\`, doublequote, `\n` line ends): a quote
 * inside a field is doubled, a backslash escaped by a backslash; numbers and booleans are numeric
 * (bare under nonnumeric); None is an empty string (quoted under nonnumeric, as Python does).
 */
function csvField(v: Value, quote: Quote): string {
  const numeric = typeof v === 'number' || typeof v === 'boolean';
  const text = v === null || v === undefined ? '' : pyStr(v);
  let special = false;
  let out = '';
  for (const ch of text) {
    if (ch === ',' || ch === '\\' || ch === '"' || ch === '\n') {
      if (quote === 'none') out += '\\' + ch;
      else if (ch === '"') out += '""';
      else if (ch === '\\') out += '\\\\';
      else out += ch;
      if (quote !== 'none' && ch !== '\\') special = true;
      continue;
    }
    out += ch;
  }
  const quoted = quote === 'all' || (quote === 'nonnumeric' && !numeric) || (quote === 'minimal' && special);
  return quoted ? `"${out}"` : out;
}

/** One line of csv (a streamed list writes them one by one). */
export function csvLine(r: readonly Value[], quote: Quote): string {
  return r.map((v) => csvField(v, quote)).join(',') + '\n';
}

export function renderCsv(t: Table, quote: Quote = 'nonnumeric'): string {
  const header = t.kind === 'list' ? t.columns : t.fields;
  const rows = t.kind === 'list' ? t.rows : [t.values];
  return [header, ...rows].map((r) => csvLine(r, quote)).join('');
}

/** One line of the value format for a list row. */
export function valueLine(r: readonly Value[]): string {
  return r.map(pyStr).join(' ') + '\n';
}

/** A list: one line per row, values joined by a space; a show: one value per line. */
export function renderValue(t: Table): string {
  if (t.kind === 'show') return t.values.map((v) => pyStr(v) + '\n').join('');
  return t.rows.map(valueLine).join('');
}

/**
 * cliff's shell formatter: `PREFIXname="value"`, the name lower-cased with spaces, `:` and `-`
 * turned to `_`; only `"` is escaped in the value (as cliff does).
 */
export function renderShell(t: Table, prefix: string): string {
  if (t.kind !== 'show') throw new Error('shell is for show commands');
  return t.fields
    .map((f, i) => {
      const name = f.toLowerCase().replace(/ /g, '_').replace(/:/g, '_').replace(/-/g, '_');
      return `${prefix}${name}="${pyStr(t.values[i]).replace(/"/g, '\\"')}"\n`;
    })
    .join('');
}
