/**
 * Text that comes from outside dcm (a gate check's or a run's output, a site's answer, a name typed
 * on the command line) as dcm shows and records it: every control character escaped, so that a
 * terminal shows it instead of acting on it (an `ESC ]0;…BEL` would retitle the operator's window,
 * an `ESC [31m` recolour it), and cut to a bound, so that 3 MB of binary on a check's stdout leaves
 * one short line. The record keeps the escaped text: what `strategy events`, `strategy status` and
 * the report print later is already harmless. Pure, and idempotent: escaping escaped text changes
 * nothing, so each layer may apply it again.
 */

/** A line of outside text (a check's last line, a run's reason or progress, a site's word). README "Text from outside dcm". */
export const OUTSIDE_LINE_MAX = 200;

/**
 * C0 and C1 controls and DEL (\p{Cc}); the bidirectional overrides and isolates, which reorder
 * what a terminal shows (a name reading as another); lone surrogates, which no terminal can show.
 */
// With the `u` flag a well-formed pair is one code point: the surrogate range matches lone halves only.
const UNSAFE = /[\p{Cc}\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]/u;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'gu');

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeOne(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Whether `text` holds anything `visible` would escape. */
export function hasControls(text: string): boolean {
  return UNSAFE.test(text);
}

/**
 * `text` with its control characters escaped (`\x1b`, `\n`, `\u202e`), cut to `max` characters
 * (with `…` as the last of them when cut), never inside an escape or a surrogate pair.
 */
export function visible(text: string, max: number = OUTSIDE_LINE_MAX): string {
  const escaped = UNSAFE.test(text) ? text.replace(UNSAFE_ALL, escapeOne) : text;
  if (escaped.length <= max) return escaped;
  // Cut at a boundary: not inside a `\xNN`/`\uNNNN` made above, not between two halves of a pair.
  let end = max - 1;
  const back = escaped.lastIndexOf('\\', end);
  if (back >= 0 && back > end - 6) {
    const m = /^\\(x[0-9a-f]{2}|u[0-9a-f]{4}|[nrt])/.exec(escaped.slice(back));
    if (m && back + m[0].length > end) end = back;
  }
  const code = escaped.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${escaped.slice(0, end)}…`;
}

/** `visible`, on one line: runs of white space (a newline included) as one space; for a check's or a run's last line. */
export function visibleLine(text: string, max: number = OUTSIDE_LINE_MAX): string {
  return visible(text.replace(/[ \t\r\n]+/g, ' ').trim(), max);
}
