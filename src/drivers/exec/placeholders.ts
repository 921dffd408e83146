/**
 * Placeholders of an exec command (SPEC §7.2): `{cloud}`, `{state}`, … replaced by the run's
 * values. `{{` and `}}` stand for literal braces. Only lowercase names are placeholders, so a
 * shell's `${HOME}` passes through untouched.
 */
import { FIELD_NAMES } from '../../domain/fields.js';
import { labelKeyProblem } from '../../domain/inventory.js';

/** Type options as stored in extra args, by placeholder name. */
export const TYPE_OPTION_KEYS: Record<string, string> = {
  patch_id: 'patch_id',
  release_id: 'release_id',
  to_version: 'to_version',
  release: 'prestage_software_version',
  subject: 'subject',
  expiry_date: 'expiry_date',
  cert_file: 'cert_file',
};

/** The subcloud's fields a command may name: every field `subcloud show -d` prints (domain/fields.ts). */
export const SUBCLOUD_FIELDS = FIELD_NAMES;

export const PLACEHOLDERS: readonly string[] = [
  'cloud',
  'state',
  'type',
  'attempt',
  'stage',
  'db',
  ...Object.keys(TYPE_OPTION_KEYS),
  ...SUBCLOUD_FIELDS,
];

/**
 * `{label.KEY}` is the subcloud's label KEY (empty for a subcloud without it): labels are free, so
 * any well-formed key is known. Only the `label.` prefix takes a dot: `{a.b}` stays literal text.
 */
const PATTERN = /\{\{|\}\}|\{(label\.[a-z_][a-z0-9_]*|[a-z_][a-z0-9_]*)\}/g;

export const LABEL_PREFIX = 'label.';

function known(name: string): boolean {
  if (name.startsWith(LABEL_PREFIX)) return labelKeyProblem(name.slice(LABEL_PREFIX.length)) === null;
  return PLACEHOLDERS.includes(name);
}

/** The placeholder names used in `text` that are not known; empty when all are. */
export function unknownPlaceholders(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PATTERN)) {
    if (m[1] !== undefined && !known(m[1])) out.push(m[1]);
  }
  return out;
}

/** The placeholder names used in `text`, in order (a name used twice comes twice). */
export function placeholdersIn(text: string): string[] {
  return [...text.matchAll(PATTERN)].flatMap((m) => (m[1] === undefined ? [] : [m[1]]));
}

/** Characters after which a `#` starts a shell comment (the start of a word). */
const WORD_START = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);

/**
 * The placeholders of a string command that stand inside shell quotes, with the quote. A value is
 * single-quoted when rendered: inside "…" the quotes become part of the word, inside '…' they
 * close and reopen the quote and leave the value bare. A small scan of sh's quoting (backslash,
 * '…', "…", comments), enough to tell where a placeholder stands.
 */
export function quotedPlaceholders(cmd: string): { name: string; quote: '"' | "'" }[] {
  const out: { name: string; quote: '"' | "'" }[] = [];
  const at = new RegExp(PATTERN.source, 'y');
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < cmd.length; ) {
    const c = cmd[i];
    at.lastIndex = i;
    const m = at.exec(cmd);
    if (m) {
      if (m[1] !== undefined && quote) out.push({ name: m[1], quote });
      i += m[0].length;
    } else if (quote === "'") {
      if (c === "'") quote = null;
      i += 1;
    } else if (c === '\\') {
      i += 2;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      i += 1;
    } else if (c === "'" || c === '"') {
      quote = c;
      i += 1;
    } else if (c === '#' && (i === 0 || WORD_START.has(cmd[i - 1]))) {
      const end = cmd.indexOf('\n', i);
      i = end < 0 ? cmd.length : end;
    } else {
      i += 1;
    }
  }
  return out;
}

/** Single-quote a value for /bin/sh: nothing inside is expanded. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

export function render(text: string, values: Record<string, string>, quote: boolean): string {
  return text.replace(PATTERN, (all, name: string | undefined) => {
    if (name === undefined) return all[0];
    const v = values[name] ?? '';
    return quote ? shellQuote(v) : v;
  });
}
