/** `-c NAME` column selection (repeatable, names exactly as printed). */
import { UsageError } from '../../domain/errors.js';
import type { Result } from './result.js';

export function selectColumns(result: Result, wanted: readonly string[]): Result {
  if (wanted.length === 0) return result;
  const names = result.kind === 'list' ? result.columns : result.fields;
  const idx = wanted.map((w) => {
    const i = names.indexOf(w);
    if (i < 0) {
      throw new UsageError(`unknown column '${w}'; known columns: ${names.map((n) => `'${n}'`).join(', ')}`);
    }
    return i;
  });
  if (result.kind === 'list') {
    return { kind: 'list', columns: idx.map((i) => names[i]), rows: result.rows.map((r) => idx.map((i) => r[i])) };
  }
  return { kind: 'show', fields: idx.map((i) => names[i]), values: idx.map((i) => result.values[i]) };
}
