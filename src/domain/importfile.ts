/**
 * `subcloud import`: CSV with a header, a JSON array, or JSON lines. Every row becomes
 * RawSubcloudFields plus a name and the line it came from, or the whole import fails naming the
 * line. Pure (text in, rows out).
 */
import { createRequire } from 'node:module';
import { OperationError, UsageError } from './errors.js';
import { ENDPOINTS, type Endpoint } from './types.js';
import {
  camel,
  labelKeyProblem,
  nameProblem,
  parseLabelChanges,
  parseLabelList,
  parseSubcloudFields,
  quoteName,
  UNTRACKED_FIELDS,
  type LabelChanges,
  type SubcloudInput,
} from './inventory.js';

export interface ImportRow {
  line: number;
  name: string;
  fields: SubcloudInput;
}

// Loaded on first use, so that commands other than import do not pay for it at start.
const require = createRequire(import.meta.url);
const parseCsv: typeof import('csv-parse/sync').parse = (...args: Parameters<typeof import('csv-parse/sync').parse>) =>
  (require('csv-parse/sync') as typeof import('csv-parse/sync')).parse(...args);

type RawRow = { line: number; data: Record<string, unknown> };

/** Column names are matched loosely: case, spaces and dashes do not matter. */
function norm(key: string): string {
  return key.trim().toLowerCase().replace(/[\s-]+/g, '_');
}

const SYNC_KEYS = new Map<string, Endpoint>();
for (const e of ENDPOINTS) {
  const k = norm(e);
  for (const variant of [k, `${k}_sync`, `${k}_sync_status`]) SYNC_KEYS.set(variant, e);
}

const FIELD_KEYS: Record<string, string> = {
  name: 'name',
  description: 'description',
  location: 'location',
  group: 'group',
  group_name: 'group',
  group_id: 'group',
  management: 'management',
  availability: 'availability',
  deploy_status: 'deployStatus',
  software_version: 'softwareVersion',
  prestage_status: 'prestageStatus',
  sync: 'sync',
  ...Object.fromEntries(UNTRACKED_FIELDS.map((f) => [f, camel(f)])),
};

/** The field a column sets: two columns that set the same one make the row ambiguous. */
function fieldOf(key: string): string | null {
  const k = norm(key);
  if (k === 'sync') return 'sync';
  if (k === 'labels') return 'labels';
  if (k.startsWith(LABEL_PREFIX)) return `label:${k.slice(LABEL_PREFIX.length)}`;
  if (SYNC_KEYS.has(k)) return `sync:${SYNC_KEYS.get(k)}`;
  return FIELD_KEYS[k] ?? null;
}

/** Why these column names cannot be one row's (a field named twice), or null. */
export function duplicateColumns(keys: readonly string[]): string | null {
  const seen = new Map<string, string>();
  for (const key of keys) {
    const field = fieldOf(key);
    if (field === null) continue;
    const before = seen.get(field);
    if (before !== undefined) {
      return before.trim() === key.trim()
        ? `column '${key.trim()}' is given twice`
        : `columns '${before.trim()}' and '${key.trim()}' name the same field`;
    }
    seen.set(field, key);
  }
  return null;
}

/** A column `label.KEY` sets that one label; `labels` sets several (`k=v;k2=v2`). */
const LABEL_PREFIX = 'label.';

/**
 * The labels a row sets: its `labels` column (text, or a JSON object) and its `label.KEY` columns;
 * a key in both is given twice.
 */
function rowLabels(list: unknown, single: [string, string][], fail: (msg: string) => never): LabelChanges | undefined {
  let out: LabelChanges = {};
  if (list !== undefined && list !== null && list !== '') {
    if (typeof list === 'object') {
      if (Array.isArray(list)) fail("column 'labels' must be text (k=v;k2=v2) or an object");
      const items = Object.entries(list as Record<string, unknown>).map(([k, v]) => {
        if (v !== null && typeof v === 'object') fail(`label '${k}' must be a plain value`);
        return `${k}=${v === null ? '' : String(v).trim()}`;
      });
      out = parseLabelChanges(items);
    } else out = parseLabelList(String(list));
  }
  for (const [key, value] of single) {
    const problem = labelKeyProblem(key);
    if (problem) fail(`invalid label column '${LABEL_PREFIX}${key}': ${problem}`);
    if (key in out) fail(`label '${key}' is given twice (in 'labels' and in '${LABEL_PREFIX}${key}')`);
    Object.assign(out, parseLabelChanges([`${key}=${value}`]));
  }
  return Object.keys(out).length ? out : undefined;
}

/** `keysChecked`: every row has the keys of a header already checked (CSV): not checked again per row. */
function toImportRow(raw: RawRow, keysChecked: boolean): ImportRow {
  const fail = (msg: string): never => {
    throw new OperationError(`line ${raw.line}: ${msg}`);
  };
  if (raw.data === null || typeof raw.data !== 'object' || Array.isArray(raw.data)) fail('a row must be an object');
  const dup = keysChecked ? null : duplicateColumns(Object.keys(raw.data));
  if (dup) fail(dup);
  const fields: Record<string, string> = {};
  const sync: string[] = [];
  let labelList: unknown;
  const single: [string, string][] = [];
  for (const [key, value] of Object.entries(raw.data)) {
    if (value === null || value === undefined || value === '') continue;
    const k = norm(key);
    if (k === 'labels') {
      labelList = value;
      continue;
    }
    if (typeof value === 'object') fail(`column '${key}' must be a plain value`);
    const text = String(value).trim();
    if (k.startsWith(LABEL_PREFIX)) single.push([k.slice(LABEL_PREFIX.length), text]);
    else if (k === 'sync') sync.unshift(`all=${text}`);
    else if (SYNC_KEYS.has(k)) sync.push(`${SYNC_KEYS.get(k)}=${text}`);
    else if (FIELD_KEYS[k]) fields[FIELD_KEYS[k]] = text;
    else fail(`unknown column '${key}'`);
  }
  const name = fields.name;
  if (!name) fail("missing 'name'");
  const problem = nameProblem(name);
  if (problem) fail(`invalid subcloud name ${quoteName(name)}: ${problem}`);
  delete fields.name;
  try {
    const labels = rowLabels(labelList, single, fail);
    const parsed = parseSubcloudFields({ ...fields, sync });
    return { line: raw.line, name, fields: labels ? { ...parsed, labels } : parsed };
  } catch (err) {
    if (err instanceof UsageError) fail(err.message);
    throw err;
  }
}

function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/**
 * Split a JSON array into its top-level elements with the offset each starts at, so that a broken
 * element can be reported by line (V8's JSON.parse messages carry no position on Node 20).
 */
function splitJsonArray(text: string): { start: number; text: string }[] {
  const items: { start: number; text: string }[] = [];
  let depth = 0;
  let inString = false;
  let start = -1;
  const open = text.indexOf('[');
  let i = open + 1;
  for (; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    if (start < 0 && !/\s/.test(c) && c !== ',' && !(depth === 0 && c === ']')) start = i;
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (depth === 0) break; // end of the array
      depth--;
    } else if (c === ',' && depth === 0) {
      if (start < 0) throw new OperationError(`line ${lineAt(text, i)}: empty element in JSON array`);
      items.push({ start, text: text.slice(start, i) });
      start = -1;
    }
  }
  if (i >= text.length) throw new OperationError(`line ${lineAt(text, text.length)}: unterminated JSON array`);
  if (start >= 0) items.push({ start, text: text.slice(start, i) });
  else if (items.length > 0) throw new OperationError(`line ${lineAt(text, i)}: empty element in JSON array (a comma before ']')`);
  const rest = text.slice(i + 1).trim();
  if (rest !== '') throw new OperationError(`line ${lineAt(text, i + 1 + text.slice(i + 1).search(/\S/))}: unexpected text after JSON array`);
  return items;
}

function parseJsonArray(text: string): RawRow[] {
  return splitJsonArray(text).map((item) => {
    const line = lineAt(text, item.start);
    try {
      return { line, data: JSON.parse(item.text) as Record<string, unknown> };
    } catch (err) {
      // Name the line inside the element where the parse broke, when V8 tells the position.
      const pos = /position (\d+)/.exec((err as Error).message);
      const where = pos ? lineAt(text, item.start + Number(pos[1])) : line;
      throw new OperationError(`line ${where}: invalid JSON (${(err as Error).message})`);
    }
  });
}

function parseJsonLines(text: string, offset = 0): RawRow[] {
  const rows: RawRow[] = [];
  text.split('\n').forEach((raw, i) => {
    const t = raw.trim();
    if (t === '') return;
    try {
      rows.push({ line: i + 1 + offset, data: JSON.parse(t) as Record<string, unknown> });
    } catch (err) {
      throw new OperationError(`line ${i + 1 + offset}: invalid JSON (${(err as Error).message})`);
    }
  });
  return rows;
}

function parseCsvHeader(text: string): string[] {
  try {
    return ((parseCsv(text, { to_line: 1, bom: true, relax_column_count: true }) as string[][])[0] ?? []).map(String);
  } catch {
    return []; // a broken header is reported by the full parse, with its line
  }
}

/** `offset`: lines of the file before `text`'s second line (a batch parsed under its header). */
function parseCsvRows(text: string, offset = 0): RawRow[] {
  const options = { columns: true, skip_empty_lines: true, trim: true, bom: true } as const;
  try {
    if (!text.includes('"')) {
      // No quoting, so no record spans lines: each record is the next non-empty line. Asking the
      // parser for line numbers instead (its `info` option) costs more than the parse itself.
      const records = parseCsv(text, options) as Record<string, string>[];
      const lines: number[] = [];
      text.split('\n').forEach((l, i) => {
        if (l.replace(/\r$/, '') !== '') lines.push(i + 1);
      });
      if (lines.length === records.length + 1) return records.map((data, i) => ({ line: lines[i + 1] + offset, data }));
    }
    const records = parseCsv(text, { ...options, info: true }) as unknown as {
      record: Record<string, string>;
      info: { lines: number };
    }[];
    return records.map((r) => ({ line: r.info.lines + offset, data: r.record }));
  } catch (err) {
    const m = err as Error & { lines?: number };
    const why = m.message.replace(/^Invalid [^:]*: /, '').replace(/\bon line (\d+)/g, (_s, n: string) => `on line ${Number(n) + offset}`);
    throw new OperationError(`line ${m.lines === undefined ? '?' : m.lines + offset}: invalid CSV (${why})`);
  }
}

/** The CSV header's checks: a `name` column, no field named twice. */
function checkCsvHeader(body: string): void {
  const header = body.split('\n', 1)[0];
  const cols = header.split(',').map((c) => norm(c.replace(/"/g, '')));
  if (!cols.includes('name')) throw new OperationError("line 1: CSV header has no 'name' column");
  // The CSV parser keeps only the last of two columns with one name: check the header itself.
  const dup = duplicateColumns(parseCsvHeader(body));
  if (dup) throw new OperationError(`line 1: ${dup}`);
}

/**
 * The file's rows in batches of about `size` lines, checked as parseImport checks them, for an
 * import that inserts as it reads: a CSV without quotes (no record spans lines, so a batch ends at
 * any line end) and JSON lines are cut from the bytes a batch at a time, and neither the whole
 * text nor every row is ever held. Other files (a JSON array, quoted CSV) are parsed whole and
 * handed out in batches. Names twice within the file are NOT checked here: the caller learns of
 * them from the store's unique name (and tells them from names already there by id).
 */
export function* importBatches(buf: Buffer, size = 1_000): Generator<ImportRow[], void, undefined> {
  let start = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  while (start < buf.length && (buf[start] === 0x20 || buf[start] === 0x09 || buf[start] === 0x0a || buf[start] === 0x0d)) start++;
  const first = String.fromCharCode(buf[start] ?? 0);
  const quoted = buf.includes(0x22);
  if (first === '[' || (first !== '{' && quoted)) {
    const rows = parseImport(buf.toString('utf8'), false);
    for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
    return;
  }
  // Line numbers count from the real start of the file (leading blank lines included).
  const bom = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  let pos = bom;
  let line = 1;
  /** The next `n` lines as text, and the number of the first. */
  const take = (n: number): { text: string; first: number } | null => {
    if (pos >= buf.length) return null;
    let end = pos;
    let k = 0;
    while (k < n && end < buf.length) {
      const nl = buf.indexOf(0x0a, end);
      end = nl < 0 ? buf.length : nl + 1;
      k++;
    }
    const out = { text: buf.toString('utf8', pos, end), first: line };
    pos = end;
    line += k;
    return out;
  };
  if (first === '{') {
    for (let b = take(size); b; b = take(size)) yield parseJsonLines(b.text, b.first - 1).map((r) => toImportRow(r, false));
    return;
  }
  const head = take(1);
  if (!head) return;
  const header = head.text.replace(/\r?\n$/, '');
  checkCsvHeader(header);
  for (let b = take(size); b; b = take(size)) {
    yield parseCsvRows(`${header}\n${b.text}`, b.first - 2).map((r) => toImportRow(r, true));
  }
}

/** Parse the whole file; names must be unique within it (unless `uniqueNames` is false). */
export function parseImport(text: string, uniqueNames = true): ImportRow[] {
  const body = text.replace(/^\uFEFF/, '');
  const first = body.trimStart()[0];
  let raws: RawRow[];
  const csv = first !== '[' && first !== '{';
  if (first === '[') raws = parseJsonArray(body);
  else if (first === '{') raws = parseJsonLines(body);
  else {
    checkCsvHeader(body);
    raws = parseCsvRows(body);
  }
  const rows = raws.map((r) => toImportRow(r, csv));
  if (!uniqueNames) return rows;
  const seen = new Map<string, number>();
  for (const r of rows) {
    const before = seen.get(r.name);
    if (before !== undefined) throw new OperationError(`line ${r.line}: duplicate name '${r.name}' (first on line ${before})`);
    seen.set(r.name, r.line);
  }
  return rows;
}
