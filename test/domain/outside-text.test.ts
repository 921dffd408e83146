/** Outside text as dcm shows and records it (README "Text from outside dcm"): escaped, and cut. */
import { expect, test } from '@jest/globals';
import fc from 'fast-check';
import { hasControls, OUTSIDE_LINE_MAX, visible, visibleLine } from '../../src/domain/outside-text.js';

test("a terminal's title and colour sequences are shown, not acted on", () => {
  expect(visible('x\x1b]0;PWN\x07\x1b[31mred')).toBe('x\\x1b]0;PWN\\x07\\x1b[31mred');
  expect(visible('a\tb\r\nc\x00\x7f\x9b')).toBe('a\\tb\\r\\nc\\x00\\x7f\\x9b');
  // Bidirectional overrides reorder what is shown; a lone surrogate cannot be shown at all.
  expect(visible('abc\u202edcba')).toBe('abc\\u202edcba');
  expect(visible('a\ud800b')).toBe('a\\ud800b');
  // Text with nothing to escape is itself, a well-formed pair and non-ASCII letters included.
  expect(visible('Zürich 😀 ok')).toBe('Zürich 😀 ok');
});

test('cut to the bound, never inside an escape or a pair, with … as the last character', () => {
  expect(visible('a'.repeat(OUTSIDE_LINE_MAX))).toBe('a'.repeat(OUTSIDE_LINE_MAX));
  expect(visible('a'.repeat(OUTSIDE_LINE_MAX + 1))).toBe(`${'a'.repeat(OUTSIDE_LINE_MAX - 1)}…`);
  expect(visible('ab\x1bcdef', 5)).toBe('ab…');
  expect(visible('abc😀def', 5)).toBe('abc…');
});

test('visibleLine: one line, white space runs as one space', () => {
  expect(visibleLine('  alarms:\n\t2 critical \r\n')).toBe('alarms: 2 critical');
});

test('for any text: no control character is left, the bound holds, and escaping again changes nothing', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 600 }), fc.integer({ min: 8, max: 300 }), (s, max) => {
      const v = visible(s, max);
      expect(hasControls(v)).toBe(false);
      expect(v.length).toBeLessThanOrEqual(max);
      expect(visible(v, max)).toBe(v);
    }),
  );
});
