/**
 * The run-log layouts (src/domain/logs.ts), both of them (a strategy keeps the one it was created
 * with): names that used to share a folder or a file (`a/b` and `a_b`, `..` and `_..`, `.` and
 * `_.`) no longer do, and a seeded property test over hostile names: distinct (cloud, state,
 * attempt) never share a path, and every path stays inside the log folder (layout 2: inside the
 * strategy's folder); layout 2's names hold no white space. Names that would pass the file
 * system's 255-byte limit are told apart.
 */
import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import path from 'node:path';
import { layoutOf, logComponent, logNameProblem, logSlug, parseStrategyId, runBase, strategyIdOf, unslug, type LayoutVersion, type LogLayout } from '../../src/domain/logs.js';

const DIR = '/var/dcm/run.logs';
const ID = '20261201175353123456';
const SUFFIXES = ['.log', '.pid', '.status', '.next', '.err', '.run', '.progress'];
const LAYOUTS: Record<LayoutVersion, LogLayout> = { 1: { dir: DIR, version: 1, strategy: ID }, 2: { dir: DIR, version: 2, strategy: ID } };
/** Where each layout's paths must stay, and how many components they have below it. */
const ROOT: Record<LayoutVersion, string> = { 1: DIR, 2: path.join(DIR, ID) };

/** Every file a run may write. */
const files = (v: LayoutVersion, cloud: string, attempt: number, state: string) =>
  SUFFIXES.map((s) => runBase(LAYOUTS[v], cloud, attempt, state) + s);

describe('run-log paths (layout 1, strategies created before layout 2)', () => {
  test.each([
    ['a/b', 'a_b'],
    ['..', '_..'],
    ['.', '_.'],
    ['%2F', '/'],
    ['.x', '%2Ex'],
  ])('%j and %j have paths of their own, as clouds and as states', (a, b) => {
    expect(logComponent(a)).not.toBe(logComponent(b));
    for (const v of [1, 2] as const) {
      expect(runBase(LAYOUTS[v], a, 1, 'pre check')).not.toBe(runBase(LAYOUTS[v], b, 1, 'pre check'));
      expect(runBase(LAYOUTS[v], 's1', 1, a)).not.toBe(runBase(LAYOUTS[v], 's1', 1, b));
    }
  });

  test('layout 1 is the layout earlier dcm versions wrote: DIR/<cloud>/<attempt>-<state>', () => {
    expect(runBase(LAYOUTS[1], 's1', 2, 'pre check')).toBe(`${DIR}/s1/2-pre check`);
    expect(runBase(LAYOUTS[1], 'a/b', 1, '..')).toBe(`${DIR}/a%2Fb/1-%2E.`);
  });

  test('a component is never empty-looking, hidden, or a path', () => {
    for (const name of ['.', '..', '...', '/', '//', 'a/../b', '\0', '\n', '%']) {
      const c = logComponent(name);
      expect(c).not.toMatch(/^\./);
      expect(c).not.toMatch(/[/\0\n]/);
    }
  });

  // Names as hostile as the inventory lets through (and more): dots, slashes, percents, spaces,
  // dashes and underscores (layout 2's own spellings), invisible marks, any unicode.
  const name = fc.oneof(
    fc.string({ unit: fc.constantFrom('.', '/', '%', '_', '2', 'E', 'F', 'a', '-', ' ', '\0', '\n', '\u00a0', '\u200b', 'é'), minLength: 1, maxLength: 8 }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 6 }),
    fc.constantFrom('.', '..', '_.', '_..', 'a/b', 'a_b', '%2F', '%2E', '1-a', 'a.log', 'a.log.status', 'pre check', 'pre-check', 'pre_check', 'pre%5Fcheck', '\ud800', '\ufffd'),
  );
  const run = fc.record({ cloud: name, state: name, attempt: fc.integer({ min: 1, max: 1000 }) });

  test.each([1, 2] as const)('layout %i: distinct (cloud, state, attempt) never share a path, and every path stays inside the folder', (v) => {
    fc.assert(
      fc.property(run, run, (x, y) => {
        // What is wrong with these two runs' paths; one expect per case keeps 3000 cases quick.
        const wrong: string[] = [];
        const fx = files(v, x.cloud, x.attempt, x.state);
        const fy = files(v, y.cloud, y.attempt, y.state);
        for (const f of [...fx, ...fy]) {
          const rel = path.relative(ROOT[v], f);
          const parts = rel.split(path.sep);
          if (rel.startsWith('..') || path.isAbsolute(rel)) wrong.push(`${rel}: outside the folder`);
          // Exactly the cloud's folder and the run's file: nothing climbed out or dug deeper.
          if (parts.length !== 2) wrong.push(`${rel}: ${parts.length} components`);
          if (parts.some((p) => p.startsWith('.'))) wrong.push(`${rel}: hidden`);
          // Layout 2: no white space (nor anything invisible) in any name.
          if (v === 2 && /[\s\p{Cc}\p{Cf}]/u.test(rel)) wrong.push(`${rel}: white space or invisible`);
        }
        if (v === 2 && (unslug(logSlug(x.cloud)) !== x.cloud || unslug(logSlug(x.state)) !== x.state)) wrong.push('not decoded back');
        const same = x.cloud === y.cloud && x.state === y.state && x.attempt === y.attempt;
        if (!same && fx.some((f) => fy.includes(f))) wrong.push('shared');
        expect(wrong).toEqual([]);
      }),
      { seed: 20261201, numRuns: 3000 },
    );
  });

  test("names past the file system's 255-byte limit (layout 1) are found, counting bytes not characters", () => {
    expect(logNameProblem('cloud', 'x'.repeat(255), 1)).toBeNull();
    expect(logNameProblem('cloud', '☃'.repeat(255), 1)).toMatch(/765 bytes, over the file system's limit of 255/);
    expect(logNameProblem('cloud', '/'.repeat(90), 1)).toMatch(/270 bytes/); // percent-encoding counts
    expect(logNameProblem('state', 'x'.repeat(241), 1)).toBeNull();
    expect(logNameProblem('state', 'x'.repeat(300), 1)).toMatch(/run log file names would be 314 bytes/);
  });
});

describe('run-log paths (layout 2, every strategy created now)', () => {
  test("DIR/<strategy id>/<cloud>/<attempt>-<state>, a space written '-', a '-' written '_'", () => {
    expect(runBase(LAYOUTS[2], 's1', 2, 'pre check')).toBe(`${DIR}/${ID}/s1/2-pre-check`);
    expect(runBase(LAYOUTS[2], 'site-07', 1, 'sw-deploy pre-check')).toBe(`${DIR}/${ID}/site_07/1-sw_deploy-pre_check`);
    expect(logSlug('creating VIM patch strategy')).toBe('creating-VIM-patch-strategy');
  });

  test('the slug is injective: the names it writes alike are escaped apart', () => {
    const names = ['pre check', 'pre-check', 'pre_check', 'pre%5Fcheck', 'a/b', 'a_b', 'a%2Fb', '.x', '%2Ex', '\u00a0', '%C2%A0', '\ud800', '\ufffd', 'é', 'x\u200by', 'xy'];
    const slugs = names.map(logSlug);
    expect(new Set(slugs).size).toBe(names.length);
    expect(logSlug('pre_check')).toBe('pre%5Fcheck');
    expect(logSlug('a/b')).toBe('a%2Fb');
    expect(logSlug('..')).toBe('%2E.');
    expect(logSlug('\u00a0')).toBe('%C2%A0'); // NBSP is white space: never kept as it is
    expect(logSlug('é')).toBe('é'); // a letter of another script reads as it is
    for (const n of names) expect(unslug(logSlug(n))).toBe(n);
    // What logSlug never writes is no name of it.
    for (const foreign of ['a b', 'a%2', '%zz', '%2e', '.x', '%C3']) expect(unslug(foreign)).toBeNull();
  });

  test("a strategy's id is its created_at's digits; --strategy takes either, never a path", () => {
    expect(strategyIdOf('2026-12-01 17:53:53.123456')).toBe(ID);
    expect(parseStrategyId(ID)).toBe(ID);
    expect(parseStrategyId('2026-12-01 17:53:53.123456')).toBe(ID);
    for (const bad of ['', '1', '..', `${ID}/..`, `../${ID}`, `${ID}0`, 'latest']) expect(parseStrategyId(bad)).toBeNull();
  });

  test('the layout a strategy was created with: 2 when stored, else 1 (created by an earlier dcm)', () => {
    const created_at = '2026-12-01 17:53:53.123456';
    expect(layoutOf({ created_at, extra: { log_dir: DIR, log_layout: 2 } }, '/x/dcm.db')).toEqual(LAYOUTS[2]);
    expect(layoutOf({ created_at, extra: { log_dir: DIR } }, '/x/dcm.db')).toEqual(LAYOUTS[1]);
    expect(layoutOf({ created_at, extra: {} }, '/x/dcm.db').dir).toBe('/x/dcm.db.logs');
  });

  test("names past the file system's 255-byte limit, as layout 2 writes them", () => {
    expect(logNameProblem('cloud', 'x'.repeat(255))).toBeNull();
    expect(logNameProblem('cloud', 'a b'.repeat(85))).toBeNull(); // a space is one byte, '-'
    expect(logNameProblem('cloud', '_'.repeat(90))).toMatch(/270 bytes/); // '_' is '%5F'
    expect(logNameProblem('state', 'x'.repeat(300))).toMatch(/run log file names would be 314 bytes/);
  });
});
