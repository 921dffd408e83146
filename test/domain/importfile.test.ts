/**
 * `subcloud import` parsing (SPEC §4): CSV with a header, a JSON array, or JSON lines; a bad row is
 * reported by its line number, and nothing of a bad file is returned.
 */
import { describe, expect, test } from '@jest/globals';
import { parseImport } from '../../src/domain/importfile.js';
import { OperationError } from '../../src/domain/errors.js';

function fails(text: string): string {
  try {
    parseImport(text);
  } catch (err) {
    expect(err).toBeInstanceOf(OperationError);
    return (err as Error).message;
  }
  throw new Error('parsed');
}

describe('formats', () => {
  test('CSV with a header; empty cells leave the default; sync columns by endpoint', () => {
    const rows = parseImport(
      'name,group,management,availability,deploy status,patching_sync_status,kube-rootca\n' +
        'a1,canary,managed,online,complete,in-sync,unknown\n' +
        'a2,,unmanaged,,,,\n',
    );
    expect(rows).toEqual([
      {
        line: 2,
        name: 'a1',
        fields: {
          group: 'canary',
          management: 'managed',
          availability: 'online',
          deploy_status: 'complete',
          sync: { patching: 'in-sync', 'kube-rootca': 'unknown' },
        },
      },
      { line: 3, name: 'a2', fields: { management: 'unmanaged' } },
    ]);
  });

  test('CSV with quoted fields holding commas and quotes', () => {
    const rows = parseImport('"name","description"\n"a1","north, ""rack"" 3"\n');
    expect(rows).toEqual([{ line: 2, name: 'a1', fields: { description: 'north, "rack" 3' } }]);
  });

  test('a JSON array, the line of each element recorded', () => {
    const rows = parseImport('[\n  {"name": "b1"},\n  {"name": "b2",\n   "availability": "offline", "sync": "in-sync"}\n]\n');
    expect(rows.map((r) => [r.line, r.name])).toEqual([
      [2, 'b1'],
      [3, 'b2'],
    ]);
    expect(rows[1].fields.availability).toBe('offline');
    expect(rows[1].fields.sync).toEqual({ patching: 'in-sync', usm: 'in-sync', kubernetes: 'in-sync', 'kube-rootca': 'in-sync', firmware: 'in-sync' });
  });

  test('JSON lines; blank lines are skipped but count', () => {
    const rows = parseImport('{"name":"c1"}\n\n{"name":"c2","sync":"in-sync","patching":"out-of-sync"}\n');
    expect(rows.map((r) => [r.line, r.name])).toEqual([
      [1, 'c1'],
      [3, 'c2'],
    ]);
    // `sync` sets every endpoint; a named endpoint overrides it.
    expect(rows[1].fields.sync).toMatchObject({ patching: 'out-of-sync', usm: 'in-sync' });
  });

  test('an empty file or array imports nothing', () => {
    expect(parseImport('[]')).toEqual([]);
    expect(parseImport('name\n')).toEqual([]);
  });
});

describe('bad files name the line', () => {
  test('broken JSON on line 3 of a JSON lines file', () => {
    expect(fails('{"name":"d1"}\n{"name":"d2"}\n{"name":"d3",\n')).toMatch(/^line 3: /);
  });

  test('broken JSON on line 3 of a JSON array', () => {
    expect(fails('[\n{"name":"d1"},\n{"name":"d2", oops},\n{"name":"d4"}\n]\n')).toMatch(/^line 3: /);
    expect(fails('[\n{"name":"d1"},\n{"name":\n}\n]\n')).toMatch(/^line [34]: /);
  });

  test('an unterminated JSON array', () => {
    expect(fails('[\n{"name":"d1"},\n{"name":"d2"}\n')).toMatch(/^line \d+: .*unterminated/);
  });

  test('a duplicate name, naming both lines', () => {
    expect(fails('name\nd1\nd2\nd1\n')).toBe("line 4: duplicate name 'd1' (first on line 2)");
    expect(fails('{"name":"x"}\n{"name":"x"}\n')).toBe("line 2: duplicate name 'x' (first on line 1)");
  });

  test("a CSV without a 'name' column, a JSON row without a name", () => {
    expect(fails('nam,group\nd1,Default\n')).toMatch(/^line 1: .*'name'/);
    expect(fails('{"name":"a"}\n{"group":"Default"}\n')).toBe("line 2: missing 'name'");
    expect(fails('name,group\na,x\n,Default\n')).toBe("line 3: missing 'name'");
  });

  test('bad values and unknown columns', () => {
    expect(fails('name,patching\nd1,in-sync\nd2,maybe\n')).toMatch(/^line 3: .*maybe/);
    expect(fails('name,management\nd1,sometimes\n')).toMatch(/^line 2: .*sometimes/);
    expect(fails('{"name":"d1","colour":"red"}\n')).toMatch(/^line 1: .*colour/);
    expect(fails('{"name":"d1","group":{"id":1}}\n')).toMatch(/^line 1: /);
    expect(fails('[1]')).toMatch(/^line 1: /);
  });
});
