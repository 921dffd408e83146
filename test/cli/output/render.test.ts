/** Format choice and colour decision (SPEC §8). */
import { describe, expect, test } from '@jest/globals';
import { render, wantColor, type OutputOptions } from '../../../src/cli/output/render.js';
import { list } from '../../../src/cli/output/result.js';

const STEPS = list(['cloud', 'state'], [['s1', 'complete'], ['s2', 'failed']]);
const opts = (o: Partial<OutputOptions>): OutputOptions => ({ format: 'table', columns: [], noindent: false, color: false, ...o });

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
    expect(render(STEPS, opts({ format: 'json', noindent: true }))).toBe('[{"cloud":"s1","state":"complete"},{"cloud":"s2","state":"failed"}]\n');
    expect(render(STEPS, opts({ format: 'csv', columns: ['state'] }))).toBe('"state"\n"complete"\n"failed"\n');
  });

  test('tables are plain without colour and coloured with it, same layout', () => {
    const plain = render(STEPS, opts({}));
    expect(plain).not.toMatch(/\u001b\[/);
    const coloured = render(STEPS, opts({ color: true }));
    expect(coloured).toMatch(/\u001b\[\d+mcomplete\u001b\[\d+m/);
    expect(coloured.replace(/\u001b\[\d+m/g, '')).toBe(plain);
  });
});
