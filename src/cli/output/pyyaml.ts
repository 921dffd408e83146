/**
 * YAML exactly as PyYAML's `safe_dump(data, default_flow_style=False)` writes it (cliff's yaml
 * formatter), for what dcm prints: one flat mapping, or a list of flat mappings (keys sorted), of
 * strings, integers, booleans and nulls. The scalar-style choice and the line folding at 80
 * columns follow PyYAML's emitter (analyze_scalar, choose_scalar_style, write_plain,
 * write_single_quoted, write_double_quoted), so every reader gets the same strings back.
 */
import type { Value } from './result.js';

const BEST_WIDTH = 80;
const BREAKS = '\n\x85\u2028\u2029';
const WS = '\0 \t\r\n\x85\u2028\u2029';

/** PyYAML's implicit resolvers (YAML 1.1): a plain scalar matching one would not read back as a string. */
const IMPLICIT = [
  /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/,
  /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/,
  /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/,
  /^(?:<<)$/,
  /^(?:~|null|Null|NULL|)$/,
  /^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$/,
  /^(?:=)$/,
];

interface Analysis {
  empty: boolean;
  multiline: boolean;
  allowBlockPlain: boolean;
  allowSingleQuoted: boolean;
}

function analyze(s: string): Analysis {
  if (!s) return { empty: true, multiline: false, allowBlockPlain: true, allowSingleQuoted: true };
  let blockIndicators = false;
  let lineBreaks = false;
  let special = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  if (s.startsWith('---') || s.startsWith('...')) blockIndicators = true;
  let precededByWs = true;
  let followedByWs = s.length === 1 || WS.includes(s[1]);
  let prevSpace = false;
  let prevBreak = false;
  const chars = Array.from(s);
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i];
    if (i === 0) {
      if ('#,[]{}&*!|>\'"%@`'.includes(ch)) blockIndicators = true;
      if ('?:'.includes(ch) && followedByWs) blockIndicators = true;
      if (ch === '-' && followedByWs) blockIndicators = true;
    } else {
      if (ch === ':' && followedByWs) blockIndicators = true;
      if (ch === '#' && precededByWs) blockIndicators = true;
    }
    if (BREAKS.includes(ch)) lineBreaks = true;
    // allow_unicode is off in safe_dump: anything outside printable ASCII is "special".
    if (!(ch === '\n' || (ch >= '\x20' && ch <= '\x7e'))) special = true;
    if (ch === ' ') {
      if (i === 0) leadingSpace = true;
      if (i === chars.length - 1) trailingSpace = true;
      if (prevBreak) breakSpace = true;
      prevSpace = true;
      prevBreak = false;
    } else if (BREAKS.includes(ch)) {
      if (i === 0) leadingBreak = true;
      if (i === chars.length - 1) trailingBreak = true;
      if (prevSpace) spaceBreak = true;
      prevSpace = false;
      prevBreak = true;
    } else {
      prevSpace = false;
      prevBreak = false;
    }
    precededByWs = WS.includes(ch);
    followedByWs = i + 2 >= chars.length || WS.includes(chars[i + 2]);
  }
  let allowBlockPlain = true;
  let allowSingleQuoted = true;
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak) allowBlockPlain = false;
  if (breakSpace) allowBlockPlain = allowSingleQuoted = false;
  if (spaceBreak || special) allowBlockPlain = allowSingleQuoted = false;
  if (lineBreaks) allowBlockPlain = false;
  if (blockIndicators) allowBlockPlain = false;
  return { empty: false, multiline: lineBreaks, allowBlockPlain, allowSingleQuoted };
}

const ESCAPES: Record<string, string> = {
  '\0': '0', '\x07': 'a', '\x08': 'b', '\x09': 't', '\x0A': 'n', '\x0B': 'v', '\x0C': 'f', '\x0D': 'r',
  '\x1B': 'e', '"': '"', '\\': '\\', '\x85': 'N', '\xA0': '_', '\u2028': 'L', '\u2029': 'P',
};

/** The emitter's cursor: PyYAML decides folding from the column it has reached. */
class Writer {
  out = '';
  column = 0;
  whitespace = true;
  indention = true;
  indent = 0;

  write(data: string): void {
    this.out += data;
    this.column += data.length;
  }
  indicator(ind: string, needWhitespace: boolean, whitespace = false, indention = false): void {
    this.write(this.whitespace || !needWhitespace ? ind : ' ' + ind);
    this.whitespace = whitespace;
    this.indention = this.indention && indention;
  }
  lineBreak(data = '\n'): void {
    this.out += data;
    this.whitespace = true;
    this.indention = true;
    this.column = 0;
  }
  writeIndent(): void {
    if (!this.indention || this.column > this.indent || (this.column === this.indent && !this.whitespace)) this.lineBreak();
    if (this.column < this.indent) {
      this.whitespace = true;
      this.write(' '.repeat(this.indent - this.column));
    }
  }

  plain(text: string, split: boolean): void {
    if (!text) return;
    if (!this.whitespace) this.write(' ');
    this.whitespace = false;
    this.indention = false;
    let spaces = false;
    let breaks = false;
    let start = 0;
    for (let end = 0; end <= text.length; end++) {
      const ch = end < text.length ? text[end] : null;
      if (spaces) {
        if (ch !== ' ') {
          if (start + 1 === end && this.column > BEST_WIDTH && split) {
            this.writeIndent();
            this.whitespace = false;
            this.indention = false;
          } else this.write(text.slice(start, end));
          start = end;
        }
      } else if (breaks) {
        if (ch === null || !BREAKS.includes(ch)) {
          if (text[start] === '\n') this.lineBreak();
          for (const br of text.slice(start, end)) this.lineBreak(br === '\n' ? '\n' : br);
          this.writeIndent();
          this.whitespace = false;
          this.indention = false;
          start = end;
        }
      } else if (ch === null || ' \n\x85\u2028\u2029'.includes(ch)) {
        this.write(text.slice(start, end));
        start = end;
      }
      if (ch !== null) {
        spaces = ch === ' ';
        breaks = BREAKS.includes(ch);
      }
    }
  }

  singleQuoted(text: string, split: boolean): void {
    this.indicator("'", true);
    let spaces = false;
    let breaks = false;
    let start = 0;
    for (let end = 0; end <= text.length; end++) {
      const ch = end < text.length ? text[end] : null;
      if (spaces) {
        if (ch === null || ch !== ' ') {
          if (start + 1 === end && this.column > BEST_WIDTH && split && start !== 0 && end !== text.length) this.writeIndent();
          else this.write(text.slice(start, end));
          start = end;
        }
      } else if (breaks) {
        if (ch === null || !BREAKS.includes(ch)) {
          if (text[start] === '\n') this.lineBreak();
          for (const br of text.slice(start, end)) this.lineBreak(br === '\n' ? '\n' : br);
          this.writeIndent();
          start = end;
        }
      } else if (ch === null || ' \n\x85\u2028\u2029'.includes(ch) || ch === "'") {
        if (start < end) {
          this.write(text.slice(start, end));
          start = end;
        }
      }
      if (ch === "'") {
        this.write("''");
        start = end + 1;
      }
      if (ch !== null) {
        spaces = ch === ' ';
        breaks = BREAKS.includes(ch);
      }
    }
    this.indicator("'", false);
  }

  doubleQuoted(text: string, split: boolean): void {
    this.indicator('"', true);
    // Python indexes by code point: walk code points so escapes of astral characters are one \U.
    const cps = Array.from(text);
    let start = 0;
    for (let end = 0; end <= cps.length; end++) {
      const ch = end < cps.length ? cps[end] : null;
      if (ch === null || '"\\\x85\u2028\u2029\uFEFF'.includes(ch) || !(ch >= '\x20' && ch <= '\x7e')) {
        if (start < end) {
          this.write(cps.slice(start, end).join(''));
          start = end;
        }
        if (ch !== null) {
          const cp = ch.codePointAt(0)!;
          const data = ESCAPES[ch] !== undefined
            ? '\\' + ESCAPES[ch]
            : cp <= 0xff
              ? '\\x' + cp.toString(16).toUpperCase().padStart(2, '0')
              : cp <= 0xffff
                ? '\\u' + cp.toString(16).toUpperCase().padStart(4, '0')
                : '\\U' + cp.toString(16).toUpperCase().padStart(8, '0');
          this.write(data);
          start = end + 1;
        }
      }
      if (end > 0 && end < cps.length - 1 && (ch === ' ' || start >= end) && this.column + (end - start) > BEST_WIDTH && split) {
        const data = cps.slice(start, end).join('') + '\\';
        if (start < end) start = end;
        this.write(data);
        this.writeIndent();
        this.whitespace = false;
        this.indention = false;
        if (cps[start] === ' ') this.write('\\');
      }
    }
    this.indicator('"', false);
  }

  /** A scalar node: a key (simple key context, never split) or a value. */
  scalar(v: Value, isKey: boolean): void {
    let text: string;
    let implicitPlain: boolean;
    if (v === null || v === undefined) [text, implicitPlain] = ['null', true];
    else if (typeof v === 'boolean') [text, implicitPlain] = [v ? 'true' : 'false', true];
    else if (typeof v === 'number') [text, implicitPlain] = [String(v), true];
    else [text, implicitPlain] = [v, !IMPLICIT.some((re) => re.test(v))];
    const a = analyze(text);
    const saved = this.indent;
    if (!isKey) this.indent += 2;
    if (implicitPlain && !(isKey && (a.empty || a.multiline)) && a.allowBlockPlain) this.plain(text, !isKey);
    else if (a.allowSingleQuoted && !(isKey && a.multiline)) this.singleQuoted(text, !isKey);
    else this.doubleQuoted(text, !isKey);
    this.indent = saved;
  }
}

function mapping(w: Writer, rec: [string, Value][], first: boolean): void {
  rec.forEach(([k, v], i) => {
    if (i > 0 || !first) w.writeIndent();
    w.scalar(k, true);
    w.indicator(':', false);
    w.scalar(v, false);
  });
}

/** `yaml.safe_dump({key: value})` once per field, in field order: cliff's yaml for a show command. */
export function pyYamlFields(rec: [string, Value][]): string {
  let out = '';
  for (const field of rec) {
    const w = new Writer();
    mapping(w, [field], true);
    out += w.out + '\n';
  }
  return out;
}

/** `yaml.safe_dump([...])`: cliff's yaml for a list; each mapping's keys sorted, as PyYAML does. */
export function pyYamlList(recs: [string, Value][][]): string {
  if (recs.length === 0) return '[]\n';
  const w = pyYamlListWriter();
  return recs.map(w.item).join('') + w.close;
}

/**
 * The list written a record at a time (a streamed list): one emitter whose text is taken after
 * each record, its state (column, indention) kept, so the pieces are exactly pyYamlList's text.
 */
export function pyYamlListWriter(): { item: (rec: [string, Value][]) => string; close: string } {
  const w = new Writer();
  return {
    item(rec) {
      w.indent = 0;
      w.writeIndent();
      w.indicator('-', true, false, true);
      w.indent = 2;
      const sorted = [...rec].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      if (sorted.length === 0) w.write(' {}');
      else mapping(w, sorted, true);
      const text = w.out;
      w.out = '';
      return text;
    },
    close: '\n',
  };
}
