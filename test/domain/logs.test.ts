import { describe, expect, test } from '@jest/globals';
import { logComponent, logRuns, quoteList, runHeader, selectRuns } from '../../src/domain/logs.js';
import { statesOf } from '../../src/domain/types.js';

const PATCH = statesOf('patch');

describe('run logs: names and order', () => {
  test('runs sort by the state\'s place in the type, then attempt; other files are ignored', () => {
    const names = [
      '1-finishing patch strategy.log',
      '2-updating patches.log',
      '1-pre check.log',
      '10-updating patches.log',
      '1-updating patches.log',
      '1-updating patches.status',
      '1-updating patches.pid',
      'notes.txt',
    ];
    expect(logRuns(names, PATCH).map((r) => [r.attempt, r.state])).toEqual([
      [1, 'pre check'],
      [1, 'updating patches'],
      [2, 'updating patches'],
      [10, 'updating patches'],
      [1, 'finishing patch strategy'],
    ]);
  });

  test('a state the type does not have comes last, by name, then attempt', () => {
    const runs = logRuns(['2-zeta.log', '1-pre check.log', '1-zeta.log', '1-alpha.log'], PATCH);
    expect(runs.map((r) => `${r.attempt}-${r.state}`)).toEqual(['1-pre check', '1-alpha', '1-zeta', '2-zeta']);
    expect(runs[1].index).toBe(-1);
  });

  test("a state whose name holds '/' is found under the exec driver's spelling", () => {
    expect(logComponent('a/b')).toBe('a%2Fb');
    expect(logComponent('..')).toBe('%2E.');
    expect(logRuns(['1-a%2Fb.log', '1-a_b.log'], ['a/b', 'a_b'])).toEqual([
      { file: '1-a%2Fb.log', attempt: 1, state: 'a/b', index: 0 },
      { file: '1-a_b.log', attempt: 1, state: 'a_b', index: 1 },
    ]);
  });

  test('layout 2: runs are found under their slugs, in run order', () => {
    const names = ['1-updating-patches.log', '1-pre-check.log', '2-updating-patches.log', '1-pre-check.status', '1-a%2Fb.log'];
    expect(logRuns(names, PATCH, 2).map((r) => [r.attempt, r.state])).toEqual([
      [1, 'pre check'],
      [1, 'updating patches'],
      [2, 'updating patches'],
      [1, 'a/b'], // a state the type lacks, named as it was
    ]);
    // A layout-1 name is no layout-2 run of that state.
    expect(logRuns(['1-pre check.log'], PATCH, 2)[0].index).toBe(-1);
  });

  test('filters by state and attempt; header and quoting', () => {
    const runs = logRuns(['1-pre check.log', '1-updating patches.log', '2-updating patches.log'], PATCH);
    expect(selectRuns(runs, { state: 'updating patches' }).map((r) => r.attempt)).toEqual([1, 2]);
    expect(selectRuns(runs, { attempt: 1 }).map((r) => r.state)).toEqual(['pre check', 'updating patches']);
    expect(selectRuns(runs, { state: 'pre check', attempt: 2 })).toEqual([]);
    expect(runHeader({ attempt: 2, state: 'pre check' })).toBe('==> attempt 2, pre check <==');
    expect(quoteList(['a b', 'c'])).toBe("'a b', 'c'");
  });
});
