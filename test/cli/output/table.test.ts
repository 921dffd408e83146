/**
 * Tables on a non-TTY match dcmanager's client byte for byte (SPEC §8): `+---+` borders, one rule
 * under the header, no rules between rows, one space of padding, text left, integers right.
 */
import { describe, expect, test } from '@jest/globals';
import { renderTable } from '../../../src/cli/output/table.js';
import { list, show } from '../../../src/cli/output/result.js';

const STEP_RESULT = list(
  ['cloud', 'stage', 'state', 'details', 'started_at', 'finished_at'],
  [
    ['subcloud1', 1, 'complete', '', '2025-01-01 10:01:00.000000', '2025-01-01 10:05:00.000000'],
    ['subcloud3', 1, 'failed', 'apply phase failed', '2025-01-01 10:01:00.000000', '2025-01-01 10:05:00.000000'],
  ],
);

const STEP_TABLE = `+-----------+-------+----------+--------------------+----------------------------+----------------------------+
| cloud     | stage | state    | details            | started_at                 | finished_at                |
+-----------+-------+----------+--------------------+----------------------------+----------------------------+
| subcloud1 |     1 | complete |                    | 2025-01-01 10:01:00.000000 | 2025-01-01 10:05:00.000000 |
| subcloud3 |     1 | failed   | apply phase failed | 2025-01-01 10:01:00.000000 | 2025-01-01 10:05:00.000000 |
+-----------+-------+----------+--------------------+----------------------------+----------------------------+
`;

describe('list tables', () => {
  test('the step list of the issue, byte for byte', () => {
    expect(renderTable(STEP_RESULT)).toBe(STEP_TABLE);
  });

  test('integers right-aligned (header too, as prettytable), text left-aligned, None/True/False', () => {
    const r = list(
      ['id', 'name', 'flag', 'note'],
      [
        [7, 'a', true, null],
        [1234, 'longer name', false, 'x'],
      ],
    );
    expect(renderTable(r)).toBe(
      [
        '+------+-------------+-------+------+',
        '|   id | name        | flag  | note |',
        '+------+-------------+-------+------+',
        '|    7 | a           | True  | None |',
        '| 1234 | longer name | False | x    |',
        '+------+-------------+-------+------+',
        '',
      ].join('\n'),
    );
  });

  test('the <none> row of an empty list (filled in by render) is drawn left-aligned', () => {
    expect(renderTable(list(['id', 'name'], [['<none>', '<none>']]))).toBe(
      ['+--------+--------+', '| id     | name   |', '+--------+--------+', '| <none> | <none> |', '+--------+--------+', ''].join('\n'),
    );
  });

  test('a multi-line cell takes several lines; --max-width wraps as textwrap does (output of cliff 4.0)', () => {
    const r = list(['id', 'details'], [[1, 'one\ntwo'], [22, 'a long detail text here']]);
    expect(renderTable(r)).toBe(
      [
        '+----+-------------------------+',
        '| id | details                 |',
        '+----+-------------------------+',
        '|  1 | one                     |',
        '|    | two                     |',
        '| 22 | a long detail text here |',
        '+----+-------------------------+',
        '',
      ].join('\n'),
    );
    expect(renderTable(r, { maxWidth: 20, fitWidth: false })).toBe(
      [
        '+----+-------------+',
        '| id | details     |',
        '+----+-------------+',
        '|  1 | one         |',
        '|    | two         |',
        '| 22 | a long      |',
        '|    | detail text |',
        '|    | here        |',
        '+----+-------------+',
        '',
      ].join('\n'),
    );
  });

  test('no colour codes without a colorizer', () => {
    expect(renderTable(STEP_RESULT)).not.toMatch(/\u001b\[/);
  });

  test('a colorizer colours cells but not the layout', () => {
    const coloured = renderTable(STEP_RESULT, {
      maxWidth: 0,
      fitWidth: false,
      colorize: (col, text) => (col === 'state' ? `\u001b[32m${text}\u001b[39m` : text),
    });
    expect(coloured).toContain('\u001b[32mcomplete\u001b[39m');
    // Widths are computed on the visible text: stripping the codes gives the plain table.
    expect(coloured.replace(/\u001b\[\d+m/g, '')).toBe(STEP_TABLE);
  });
});

describe('show tables', () => {
  test('a two-column Field/Value table, both left-aligned', () => {
    const r = show([
      ['strategy type', 'patch'],
      ['max parallel subclouds', 2],
      ['stop on failure', false],
      ['subcloud apply type', null],
    ]);
    expect(renderTable(r)).toBe(
      [
        '+------------------------+-------+',
        '| Field                  | Value |',
        '+------------------------+-------+',
        '| strategy type          | patch |',
        '| max parallel subclouds | 2     |',
        '| stop on failure        | False |',
        '| subcloud apply type    | None  |',
        '+------------------------+-------+',
        '',
      ].join('\n'),
    );
  });
});
