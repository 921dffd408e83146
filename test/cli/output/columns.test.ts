/** `-c NAME` (repeatable, names exactly as printed) and the error for an unknown one (SPEC §8). */
import { describe, expect, test } from '@jest/globals';
import { selectColumns } from '../../../src/cli/output/columns.js';
import { list, show } from '../../../src/cli/output/result.js';
import { UsageError } from '../../../src/domain/errors.js';

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

  test('an unknown column is a usage error naming the known columns', () => {
    let err: unknown;
    try {
      selectColumns(SUBCLOUDS, ['name', 'deploy_status']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    const msg = (err as Error).message;
    expect(msg).toContain('deploy_status');
    for (const c of SUBCLOUDS.columns) expect(msg).toContain(`'${c}'`);
    expect(msg).not.toContain('\n');
  });

  test('column names are exact: case matters', () => {
    expect(() => selectColumns(SUBCLOUDS, ['Name'])).toThrow(UsageError);
  });

  test('an empty list keeps its selected columns', () => {
    expect(selectColumns(list(['id', 'name'], []), ['name'])).toEqual(list(['name'], []));
  });
});
