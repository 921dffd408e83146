/** Format choice and colour decision (SPEC §8). */
import { describe, expect, test } from '@jest/globals';
import { render, wantColor, type OutputOptions } from '../../../src/cli/output/render.js';
import { list, show } from '../../../src/cli/output/result.js';

const STEPS = list(['cloud', 'state'], [['s1', 'complete'], ['s2', 'failed']]);
const opts = (o: Partial<OutputOptions>): OutputOptions => ({
  format: 'table',
  columns: [],
  noindent: false,
  color: false,
  prefix: '',
  maxWidth: 0,
  fitWidth: false,
  printEmpty: false,
  sortColumns: [],
  sortDescending: false,
  quote: 'nonnumeric',
  ...o,
});

describe('wantColor', () => {
  const tty = { isTTY: true };
  test('only on a TTY', () => {
    expect(wantColor(tty, false, {})).toBe(true);
    expect(wantColor({ isTTY: false }, false, {})).toBe(false);
    expect(wantColor({}, false, {})).toBe(false);
  });
  test('never with --no-color, NO_COLOR or TERM=dumb', () => {
    expect(wantColor(tty, true, {})).toBe(false);
    expect(wantColor(tty, false, { NO_COLOR: '1' })).toBe(false);
    expect(wantColor(tty, false, { TERM: 'dumb' })).toBe(false);
    expect(wantColor(tty, false, { TERM: 'xterm-256color' })).toBe(true);
  });
});

describe('render', () => {
  test('picks the format and applies -c', () => {
    expect(render(STEPS, opts({ format: 'value', columns: ['cloud'] }))).toBe('s1\ns2\n');
    expect(render(STEPS, opts({ format: 'json', noindent: true }))).toBe('[{"cloud": "s1", "state": "complete"}, {"cloud": "s2", "state": "failed"}]\n');
    expect(render(STEPS, opts({ format: 'csv', columns: ['state'] }))).toBe('"state"\n"complete"\n"failed"\n');
  });

  test('-c keeps the table order, ignores unknown names next to a known one', () => {
    expect(render(STEPS, opts({ format: 'value', columns: ['state', 'nosuch', 'cloud'] }))).toBe('s1 complete\ns2 failed\n');
  });

  test('an empty list is one <none> row in every format (dcmanager)', () => {
    const empty = list(['cloud', 'stage'], []);
    expect(render(empty, opts({ format: 'value' }))).toBe('<none> <none>\n');
    expect(render(empty, opts({ format: 'json', noindent: true }))).toBe('[{"cloud": "<none>", "stage": "<none>"}]\n');
    expect(render(empty, opts({ format: 'csv' }))).toBe('"cloud","stage"\n"<none>","<none>"\n');
    expect(render(empty, opts({ format: 'yaml' }))).toBe("- cloud: <none>\n  stage: <none>\n");
    expect(render(empty, opts({ format: 'value', columns: ['stage'] }))).toBe('<none>\n');
  });

  test('shell: a show command only, with --prefix', () => {
    expect(render(show([['strategy type', 'patch'], ['kube-rootca_sync_status', 'a "b"']]), opts({ format: 'shell', prefix: 'p_' }))).toBe(
      'p_strategy_type="patch"\np_kube_rootca_sync_status="a \\"b\\""\n',
    );
    expect(() => render(STEPS, opts({ format: 'shell' }))).toThrow(/invalid choice: 'shell'/);
  });

  test('a command that prints nothing prints nothing, in every format', () => {
    for (const format of ['table', 'json', 'value', 'yaml', 'csv', 'shell'] as const) {
      expect(render({ kind: 'nothing' }, opts({ format }))).toBe('');
    }
  });

  test('tables are plain without colour and coloured with it, same layout', () => {
    const plain = render(STEPS, opts({}));
    expect(plain).not.toMatch(/\u001b\[/);
    const coloured = render(STEPS, opts({ color: true }));
    expect(coloured).toMatch(/\u001b\[\d+mcomplete\u001b\[\d+m/);
    expect(coloured.replace(/\u001b\[\d+m/g, '')).toBe(plain);
  });
});
