/** The SQLite-to-PostgreSQL rewrite of the store's SQL (platform/pg-dialect.ts): pure, no server. */
import { describe, expect, test } from '@jest/globals';
import { toPg } from '../../src/platform/pg-dialect.js';

describe('toPg', () => {
  test('? becomes $1, $2… in order, and not inside literals or quoted names', () => {
    expect(toPg(`SELECT * FROM t WHERE a = ? AND b = '?' AND "c?" = ? LIMIT ?`).text).toBe(
      `SELECT * FROM t WHERE a = $1 AND b = '?' AND "c?" = $2 LIMIT $3`,
    );
    expect(toPg(`SELECT 'it''s ?' AS x, ?`).text).toBe(`SELECT 'it''s ?' AS x, $1`);
  });

  test('@name parameters are numbered by first appearance and named for binding', () => {
    const t = toPg('UPDATE t SET a = @a, b = @b, c = @a WHERE id = @id');
    expect(t.text).toBe('UPDATE t SET a = $1, b = $2, c = $1 WHERE id = $3');
    expect(t.names).toEqual(['a', 'b', 'id']);
  });

  test('a query mixing both kinds is refused', () => {
    expect(() => toPg('SELECT ? , @a')).toThrow(/mixes/);
  });

  test('scalar max/min become GREATEST/LEAST; the aggregates stay', () => {
    expect(toPg('SELECT max(a), min(b), max(0, min(c, d)) FROM t').text).toBe('SELECT max(a), min(b), GREATEST(0, LEAST(c, d)) FROM t');
    expect(toPg(`SELECT max(a, 'x,y') FROM t`).text).toBe(`SELECT GREATEST(a, 'x,y') FROM t`);
  });

  test('group_concat, ifnull, julianday', () => {
    expect(toPg(`SELECT group_concat(k || '=' || v, ';' ORDER BY k) FROM l`).text).toBe(`SELECT string_agg(k || '=' || v, ';' ORDER BY k) FROM l`);
    expect(toPg('SELECT ifnull(a, 0) FROM t').text).toBe('SELECT coalesce(a, 0) FROM t');
    expect(toPg('SELECT julianday(x) FROM t').text).toBe('SELECT (EXTRACT(EPOCH FROM CAST(x AS timestamp)) / 86400.0 + 2440587.5) FROM t');
  });

  test('a function name inside a literal is left alone', () => {
    expect(toPg(`SELECT 'max(a, b)' FROM t`).text).toBe(`SELECT 'max(a, b)' FROM t`);
  });

  test('camel-case aliases are quoted; type names in casts are not', () => {
    expect(toPg('SELECT st.id AS stepId, CAST(x AS INTEGER) AS n, y AS retry_at FROM t').text).toBe(
      'SELECT st.id AS "stepId", CAST(x AS INTEGER) AS n, y AS retry_at FROM t',
    );
  });

  test('IS ? and IS NOT ? become the null-safe DISTINCT FROM; IS NULL stays', () => {
    expect(toPg('SELECT 1 FROM t WHERE a IS NOT ? AND b IS ? AND c IS NOT NULL AND d IS NULL').text).toBe(
      'SELECT 1 FROM t WHERE a IS DISTINCT FROM $1 AND b IS NOT DISTINCT FROM $2 AND c IS NOT NULL AND d IS NULL',
    );
  });

  test('json_each over a parameter becomes json_array_elements_text, typed', () => {
    expect(toPg('SELECT 1 FROM t WHERE id NOT IN (SELECT value FROM json_each(?))').text).toBe(
      'SELECT 1 FROM t WHERE id NOT IN (SELECT value::bigint FROM json_array_elements_text($1::json) AS value)',
    );
  });
});
