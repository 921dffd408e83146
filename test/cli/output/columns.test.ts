/** `-c NAME` (repeatable, names exactly as printed) and the error for an unknown one (SPEC §8). */
import { describe, expect, test } from '@jest/globals';
import { selectColumns, sortRows } from '../../../src/cli/output/columns.js';
import { list, show } from '../../../src/cli/output/result.js';
import { ClientCheckError } from '../../../src/domain/errors.js';

const SUBCLOUDS = list(
  ['id', 'name', 'management', 'availability', 'deploy status', 'sync', 'prestage status'],
  [
    [1, 's1', 'managed', 'online', 'complete', 'out-of-sync', null],
    [2, 's2', 'unmanaged', 'offline', 'deploying', 'in-sync', 'complete'],
  ],
);

describe('selectColumns', () => {
  test('no -c: the result as it is', () => {
    expect(selectColumns(SUBCLOUDS, [])).toBe(SUBCLOUDS);
  });

  test('several columns, names with spaces', () => {
    expect(selectColumns(SUBCLOUDS, ['name', 'deploy status'])).toEqual(
      list(['name', 'deploy status'], [['s1', 'complete'], ['s2', 'deploying']]),
    );
  });

  test('on a show result: the chosen fields', () => {
    const r = show([['strategy type', 'patch'], ['state', 'initial'], ['max parallel subclouds', null]]);
    expect(selectColumns(r, ['state', 'max parallel subclouds'])).toEqual(show([['state', 'initial'], ['max parallel subclouds', null]]));
  });

  test('unknown names are ignored when at least one is known (cliff)', () => {
    expect(selectColumns(SUBCLOUDS, ['deploy_status', 'name'])).toEqual(list(['name'], [['s1'], ['s2']]));
  });

  test('the table order is kept whatever order the names come in', () => {
    expect(selectColumns(SUBCLOUDS, ['sync', 'id'])).toEqual(list(['id', 'sync'], [[1, 'out-of-sync'], [2, 'in-sync']]));
  });

  test('no known name: an error naming the known columns, as cliff words it (exit 1, as the client)', () => {
    let err: unknown;
    try {
      selectColumns(SUBCLOUDS, ['deploy_status']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ClientCheckError);
    expect((err as ClientCheckError).exitCode).toBe(1);
    expect((err as Error).message).toBe(
      "No recognized column names in ['deploy_status']. Recognized columns are ('id', 'name', 'management', 'availability', 'deploy status', 'sync', 'prestage status').",
    );
  });

  test('column names are exact: case matters', () => {
    expect(() => selectColumns(SUBCLOUDS, ['Name'])).toThrow(ClientCheckError);
  });

  test('an empty list keeps its selected columns', () => {
    expect(selectColumns(list(['id', 'name'], []), ['name'])).toEqual(list(['name'], []));
  });
});

describe('sortRows (--sort-column, cliff)', () => {
  const T = list(['name', 'n', 'p'], [['b', 2, null], ['a', 2, 'x'], ['c', 1, 'a']]);
  test('the first column given has priority; stable; unknown names ignored', () => {
    expect(sortRows(T, ['n', 'nosuch', 'name'], false).rows).toEqual([['c', 1, 'a'], ['a', 2, 'x'], ['b', 2, null]]);
    expect(sortRows(T, ['n'], true).rows).toEqual([['b', 2, null], ['a', 2, 'x'], ['c', 1, 'a']]);
  });
  test('None sorts after every value ascending, before them descending', () => {
    expect(sortRows(T, ['p'], false).rows.map((r) => r[0])).toEqual(['c', 'a', 'b']);
    expect(sortRows(T, ['p'], true).rows.map((r) => r[0])).toEqual(['b', 'a', 'c']);
  });
  test('values Python cannot compare leave the order as it is', () => {
    const mixed = list(['v'], [['x'], [1], ['a']]);
    expect(sortRows(mixed, ['v'], false)).toEqual(mixed);
  });
});
