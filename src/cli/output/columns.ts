/** cliff's `-c` column selection and `--sort-column` sorting. */
import { ClientCheckError } from '../../domain/errors.js';
import type { Table, Value } from './result.js';

/** Python's repr of a list of strings, for cliff's message. */
function pyRepr(items: readonly string[], open = '[', close = ']'): string {
  return open + items.map((s) => (s.includes("'") && !s.includes('"') ? `"${s}"` : `'${s.replace(/'/g, "\\'")}'`)).join(', ') + close;
}

/**
 * `-c NAME` (repeatable): the columns keep the table's order whatever order the names come in;
 * unknown names are ignored when at least one is known; none known is an error (cliff's rule).
 */
export function selectColumns(t: Table, wanted: readonly string[]): Table {
  if (wanted.length === 0) return t;
  const names = t.kind === 'list' ? t.columns : t.fields;
  const keep = names.map((n) => wanted.includes(n));
  if (!keep.some(Boolean)) {
    throw new ClientCheckError(`No recognized column names in ${pyRepr(wanted)}. Recognized columns are ${pyRepr(names, '(', names.length === 1 ? ',)' : ')')}.`);
  }
  const pick = <T>(row: readonly T[]) => row.filter((_, i) => keep[i]);
  if (t.kind === 'list') return { kind: 'list', columns: pick(t.columns), rows: t.rows.map(pick) };
  return { kind: 'show', fields: pick(t.fields), values: pick(t.values) };
}

/** Python 3 ordering of two values of one column, or null where Python raises TypeError. */
function compare(a: Value, b: Value): number | null {
  if (a === b) return 0;
  const num = (v: Value) => (typeof v === 'boolean' ? Number(v) : v);
  const x = num(a);
  const y = num(b);
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  if (typeof x === 'string' && typeof y === 'string') return x < y ? -1 : x > y ? 1 : 0;
  if (x === null && y === null) return 0;
  return null;
}

/**
 * `--sort-column C` (repeatable, the first has priority; unknown names ignored), `--sort-ascending`
 * or `--sort-descending`: cliff sorts on (value is None, value), one stable sort per column from the
 * last to the first; a column whose values cannot be compared is left as it is.
 */
export function sortRows<T extends Table>(t: T, sortColumns: readonly string[], descending: boolean): T {
  if (t.kind !== 'list' || sortColumns.length === 0) return t;
  const indexes = sortColumns.map((c) => t.columns.indexOf(c)).filter((i) => i >= 0);
  let rows = t.rows;
  for (const index of [...indexes].reverse()) {
    let failed = false;
    const sorted = [...rows].sort((r1, r2) => {
      const n1 = r1[index] === null ? 1 : 0;
      const n2 = r2[index] === null ? 1 : 0;
      let c = n1 - n2;
      if (c === 0) {
        const v = compare(r1[index], r2[index]);
        if (v === null) failed = true;
        c = v ?? 0;
      }
      return descending ? -c : c;
    });
    if (!failed) rows = sorted;
  }
  return { ...t, rows };
}
