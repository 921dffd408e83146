/** Machine formats (SPEC §8): json, csv, value, yaml, on a list and on a show result. */
import { describe, expect, test } from '@jest/globals';
import YAML from 'yaml';
import { renderCsv, renderJson, renderValue, renderYaml } from '../../../src/cli/output/formats.js';
import { list, show } from '../../../src/cli/output/result.js';

const STEPS = list(
  ['cloud', 'stage', 'state', 'details', 'started_at', 'finished_at'],
  [
    ['subcloud1', 1, 'complete', '', '2025-01-01 10:01:00.000000', '2025-01-01 10:05:00.000000'],
    ['subcloud3', 1, 'failed', 'apply phase failed', '2025-01-01 10:01:00.000000', '2025-01-01 10:05:00.000000'],
    ['subcloud4', 2, 'initial', '', null, null],
  ],
);

const RECORD = show([
  ['strategy type', 'patch'],
  ['subcloud apply type', null],
  ['max parallel subclouds', 2],
  ['stop on failure', false],
  ['state', 'initial'],
]);

describe('csv', () => {
  test('every non-numeric field quoted, numbers bare, null an empty quoted string (Python csv)', () => {
    expect(renderCsv(STEPS)).toBe(
      '"cloud","stage","state","details","started_at","finished_at"\n' +
        '"subcloud1",1,"complete","","2025-01-01 10:01:00.000000","2025-01-01 10:05:00.000000"\n' +
        '"subcloud3",1,"failed","apply phase failed","2025-01-01 10:01:00.000000","2025-01-01 10:05:00.000000"\n' +
        '"subcloud4",2,"initial","","",""\n',
    );
  });

  test('RFC 4180 escaping of quotes, commas and newlines', () => {
    const r = list(['details'], [['a "quoted", value'], ['two\nlines']]);
    expect(renderCsv(r)).toBe('"details"\n"a ""quoted"", value"\n"two\nlines"\n');
  });

  test('a show result: the fields as header, one row of values; booleans bare', () => {
    expect(renderCsv(RECORD)).toBe(
      '"strategy type","subcloud apply type","max parallel subclouds","stop on failure","state"\n"patch","",2,False,"initial"\n',
    );
  });

  test('a backslash is escaped by a backslash (cliff sets escapechar)', () => {
    expect(renderCsv(list(['p'], [['C:\\temp']]))).toBe('"p"\n"C:\\\\temp"\n');
  });

  test('--quote all, minimal, none', () => {
    const r = list(['n', 's'], [[1, 'a,b'], [2, 'plain']]);
    expect(renderCsv(r, 'all')).toBe('"n","s"\n"1","a,b"\n"2","plain"\n');
    expect(renderCsv(r, 'minimal')).toBe('n,s\n1,"a,b"\n2,plain\n');
    expect(renderCsv(r, 'none')).toBe('n,s\n1,a\\,b\n2,plain\n');
  });

  test('an empty list: the header only', () => {
    expect(renderCsv(list(['id', 'name'], []))).toBe('"id","name"\n');
  });
});

describe('json', () => {
  test('a list is an array of objects keyed by column name, typed, 2-space indent', () => {
    const text = renderJson(STEPS, false);
    expect(JSON.parse(text)).toEqual([
      { cloud: 'subcloud1', stage: 1, state: 'complete', details: '', started_at: '2025-01-01 10:01:00.000000', finished_at: '2025-01-01 10:05:00.000000' },
      { cloud: 'subcloud3', stage: 1, state: 'failed', details: 'apply phase failed', started_at: '2025-01-01 10:01:00.000000', finished_at: '2025-01-01 10:05:00.000000' },
      { cloud: 'subcloud4', stage: 2, state: 'initial', details: '', started_at: null, finished_at: null },
    ]);
    expect(text.split('\n')[1]).toBe('  {');
    expect(text.split('\n')[2]).toBe('    "cloud": "subcloud1",');
    expect(text.endsWith('\n')).toBe(true);
  });

  test('a show is one object; null and booleans typed', () => {
    expect(renderJson(RECORD, false)).toBe(
      '{\n  "strategy type": "patch",\n  "subcloud apply type": null,\n  "max parallel subclouds": 2,\n  "stop on failure": false,\n  "state": "initial"\n}\n',
    );
  });

  test('--noindent is one line with Python\'s separators ", " and ": "', () => {
    expect(renderJson(RECORD, true)).toBe(
      '{"strategy type": "patch", "subcloud apply type": null, "max parallel subclouds": 2, "stop on failure": false, "state": "initial"}\n',
    );
  });

  test('non-ASCII and control characters escaped as Python does', () => {
    expect(renderJson(show([['d', 'Zürich\t日本 \u007f 😀']]), true)).toBe('{"d": "Z\\u00fcrich\\t\\u65e5\\u672c \\u007f \\ud83d\\ude00"}\n');
  });

  test('an empty list is []', () => {
    expect(renderJson(list(['id'], []), false)).toBe('[]\n');
    expect(renderJson(list(['id'], []), true)).toBe('[]\n');
  });
});

describe('value', () => {
  test('each row: values joined by a space, one row a line', () => {
    expect(renderValue(list(['id', 'name', 'flag', 'x'], [[1, 's1', true, null], [2, 's2', false, 'y']]))).toBe('1 s1 True None\n2 s2 False y\n');
  });

  test('a show: one value a line', () => {
    expect(renderValue(RECORD)).toBe('patch\nNone\n2\nFalse\ninitial\n');
  });

  test('an empty list prints nothing', () => {
    expect(renderValue(list(['id'], []))).toBe('');
  });
});

describe('yaml', () => {
  test('the same data as json', () => {
    expect(YAML.parse(renderYaml(STEPS))).toEqual(JSON.parse(renderJson(STEPS, false)));
    expect(YAML.parse(renderYaml(RECORD))).toEqual(JSON.parse(renderJson(RECORD, false)));
    expect(renderYaml(RECORD)).toContain('strategy type: patch\n');
  });

  test('an empty list is []', () => {
    expect(renderYaml(list(['id'], []))).toBe('[]\n');
  });

  test('PyYAML quoting: timestamps, numbers-as-text, null, booleans-as-text, non-ASCII, specials', () => {
    expect(
      renderYaml(
        show([
          ['t', '2025-01-01 10:00:00.000000'],
          ['v', '24.09'],
          ['n', 'null'],
          ['y', 'yes'],
          ['u', 'Zürich'],
          ['e', ''],
          ['q', "it's"],
          ['c', 'a: b'],
          ['m', 'two\nlines'],
        ]),
      ),
    ).toBe(
      "t: '2025-01-01 10:00:00.000000'\nv: '24.09'\nn: 'null'\ny: 'yes'\nu: \"Z\\xFCrich\"\ne: ''\nq: it's\nc: 'a: b'\nm: 'two\n\n  lines'\n",
    );
  });

  test('a list: keys sorted in each item, as safe_dump does', () => {
    expect(renderYaml(list(['name', 'id'], [['a', 1]]))).toBe('- id: 1\n  name: a\n');
  });
});
