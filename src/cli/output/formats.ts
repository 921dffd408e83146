/** Machine formats: json, csv, value, yaml (SPEC §8). */
import { createRequire } from 'node:module';
import type { Result, Value } from './result.js';

function records(result: Result): Record<string, Value>[] | Record<string, Value> {
  if (result.kind === 'show') {
    return Object.fromEntries(result.fields.map((f, i) => [f, result.values[i]]));
  }
  return result.rows.map((r) => Object.fromEntries(result.columns.map((c, i) => [c, r[i]])));
}

export function renderJson(result: Result, noindent: boolean): string {
  return JSON.stringify(records(result), null, noindent ? undefined : 2) + '\n';
}

// Loaded on first use: `yaml` costs a noticeable part of every dcm start, and few runs print yaml.
const require = createRequire(import.meta.url);
const yaml = (): typeof import('yaml') => require('yaml') as typeof import('yaml');

export function renderYaml(result: Result): string {
  const data = records(result);
  if (Array.isArray(data) && data.length === 0) return '[]\n';
  // YAML 1.1, the dialect PyYAML (and so dcmanager's client) reads: `yes`, `on` and timestamps are
  // quoted, so every reader gets the same strings back.
  return yaml().stringify(data, { version: '1.1' });
}

/** Python csv QUOTE_NONNUMERIC: strings quoted, numbers and booleans bare, null empty. */
function csvField(v: Value): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return `"${v.replace(/"/g, '""')}"`;
}

export function renderCsv(result: Result): string {
  const header = result.kind === 'list' ? result.columns : result.fields;
  const rows = result.kind === 'list' ? result.rows : [result.values];
  return [header.map((h) => csvField(h)), ...rows.map((r) => r.map(csvField))].map((r) => r.join(',') + '\n').join('');
}

/** One line per row, values joined by a space; a show command prints one value per line. */
export function renderValue(result: Result): string {
  const text = (v: Value) => (v === null || v === undefined ? 'None' : v === true ? 'True' : v === false ? 'False' : String(v));
  if (result.kind === 'show') return result.values.map((v) => text(v) + '\n').join('');
  return result.rows.map((r) => r.map(text).join(' ') + '\n').join('');
}

/** Every machine format; tables live in table.ts with the colour library, loaded only for them. */
export function renderData(result: Result, format: 'json' | 'csv' | 'value' | 'yaml', noindent: boolean): string {
  switch (format) {
    case 'json':
      return renderJson(result, noindent);
    case 'csv':
      return renderCsv(result);
    case 'value':
      return renderValue(result);
    case 'yaml':
      return renderYaml(result);
  }
}
