/**
 * A command result that is a plain table of values: a list of rows, or one record shown as
 * Field/Value. The values are data (numbers, booleans, null); how they print (None, True, quoting,
 * cliff's layouts) is src/cli/output's business.
 */
export type Value = string | number | boolean | null;

export interface ListResult {
  kind: 'list';
  columns: string[];
  rows: Value[][];
}

export interface ShowResult {
  kind: 'show';
  fields: string[];
  values: Value[];
}

export type Result = ListResult | ShowResult;

export function list(columns: string[], rows: Value[][]): ListResult {
  return { kind: 'list', columns, rows };
}

export function show(record: [string, Value][]): ShowResult {
  return { kind: 'show', fields: record.map(([k]) => k), values: record.map(([, v]) => v) };
}

/** What the formatters draw: a command's result turned into cliff's columns and values. */
export type Table = Result;
