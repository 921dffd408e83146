/** Global options work before or after the command (SPEC §4). */
import { describe, expect, test } from '@jest/globals';
import { extractGlobals } from '../../src/cli/globals.js';
import { UsageError } from '../../src/domain/errors.js';

describe('extractGlobals', () => {
  test('before and after the command give the same result', () => {
    const a = extractGlobals(['-f', 'json', 'strategy', 'show']);
    const b = extractGlobals(['strategy', 'show', '-f', 'json']);
    const c = extractGlobals(['strategy', '--format=json', 'show']);
    expect(a).toEqual(b);
    expect(c).toEqual(b);
    expect(b.rest).toEqual(['strategy', 'show']);
    expect(b.globals.format).toBe('json');
  });

  test('every global option, in every spelling', () => {
    const { globals, rest } = extractGlobals([
      '--db', 'a.db', 'subcloud', '-c', 'name', 'list', '--column', 'deploy status', '-csync',
      '--noindent', '--no-color', '-q', '-fyaml', '--group', 'canary',
    ]);
    expect(globals).toEqual({ db: 'a.db', format: 'yaml', columns: ['name', 'deploy status', 'sync'], noindent: true, noColor: true, quiet: true });
    expect(rest).toEqual(['subcloud', 'list', '--group', 'canary']);
    expect(extractGlobals(['--db=b.db', 'x']).globals.db).toBe('b.db');
    expect(extractGlobals(['--quiet', 'x']).globals.quiet).toBe(true);
  });

  test('defaults: table, no columns', () => {
    expect(extractGlobals(['subcloud', 'list']).globals).toEqual({ format: 'table', columns: [], noindent: false, noColor: false, quiet: false });
  });

  test('a bad format or a missing value is a usage error', () => {
    expect(() => extractGlobals(['-f', 'xml', 'x'])).toThrow(UsageError);
    expect(() => extractGlobals(['x', '-f'])).toThrow(UsageError);
    expect(() => extractGlobals(['x', '--db'])).toThrow(UsageError);
    expect(() => extractGlobals(['x', '-c'])).toThrow(/-c/);
  });

  test('options of the command are left alone', () => {
    const argv = ['strategy', 'create', '--type', 'patch', '--force', '--max-parallel-subclouds', '3', '--cert-file', 'f'];
    expect(extractGlobals(argv).rest).toEqual(argv);
  });
});
