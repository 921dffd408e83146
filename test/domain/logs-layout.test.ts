/**
 * The run-log layout (src/domain/logs.ts): names that used to share a folder or a file (`a/b` and
 * `a_b`, `..` and `_..`, `.` and `_.`) no longer do, and a seeded property test over hostile
 * names: distinct (cloud, state, attempt) never share a path, and every path stays inside the log
 * folder. Names that would pass the file system's 255-byte limit are told apart.
 */
import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import path from 'node:path';
import { logComponent, logNameProblem, runBase } from '../../src/domain/logs.js';

const DIR = '/var/dcm/run.logs';
const SUFFIXES = ['.log', '.pid', '.status', '.next'];

/** Every file a run may write. */
const files = (cloud: string, attempt: number, state: string) => SUFFIXES.map((s) => runBase(DIR, cloud, attempt, state) + s);

describe('run-log paths', () => {
  test.each([
    ['a/b', 'a_b'],
    ['..', '_..'],
    ['.', '_.'],
    ['%2F', '/'],
    ['.x', '%2Ex'],
  ])('%j and %j have paths of their own, as clouds and as states', (a, b) => {
    expect(logComponent(a)).not.toBe(logComponent(b));
    expect(runBase(DIR, a, 1, 'pre check')).not.toBe(runBase(DIR, b, 1, 'pre check'));
    expect(runBase(DIR, 's1', 1, a)).not.toBe(runBase(DIR, 's1', 1, b));
  });

  test('a component is never empty-looking, hidden, or a path', () => {
    for (const name of ['.', '..', '...', '/', '//', 'a/../b', '\0', '\n', '%']) {
      const c = logComponent(name);
      expect(c).not.toMatch(/^\./);
      expect(c).not.toMatch(/[/\0\n]/);
    }
  });

  // Names as hostile as the inventory lets through (and more): dots, slashes, percents, any unicode.
  const name = fc.oneof(
    fc.string({ unit: fc.constantFrom('.', '/', '%', '_', '2', 'E', 'F', 'a', '-', ' ', '\0', '\n'), minLength: 1, maxLength: 8 }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
    fc.constantFrom('.', '..', '_.', '_..', 'a/b', 'a_b', '%2F', '%2E', '1-a', 'a.log', 'a.log.status'),
  );
  const run = fc.record({ cloud: name, state: name, attempt: fc.integer({ min: 1, max: 1000 }) });

  test('distinct (cloud, state, attempt) never share a path, and every path stays inside the folder', () => {
    fc.assert(
      fc.property(run, run, (x, y) => {
        const fx = files(x.cloud, x.attempt, x.state);
        const fy = files(y.cloud, y.attempt, y.state);
        for (const f of [...fx, ...fy]) {
          const rel = path.relative(DIR, f);
          expect(rel.startsWith('..') || path.isAbsolute(rel)).toBe(false);
          // Exactly the cloud's folder and the run's file: nothing climbed out or dug deeper.
          expect(rel.split(path.sep)).toHaveLength(2);
        }
        const same = x.cloud === y.cloud && x.state === y.state && x.attempt === y.attempt;
        if (!same) for (const f of fx) expect(fy).not.toContain(f);
      }),
      { seed: 20261201, numRuns: 3000 },
    );
  });

  test("names past the file system's 255-byte limit are found, counting bytes not characters", () => {
    expect(logNameProblem('cloud', 'x'.repeat(255))).toBeNull();
    expect(logNameProblem('cloud', '☃'.repeat(255))).toMatch(/765 bytes, over the file system's limit of 255/);
    expect(logNameProblem('cloud', '/'.repeat(90))).toMatch(/270 bytes/); // percent-encoding counts
    expect(logNameProblem('state', 'x'.repeat(241))).toBeNull();
    expect(logNameProblem('state', 'x'.repeat(300))).toMatch(/run log file names would be 314 bytes/);
  });
});
