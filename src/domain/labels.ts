/**
 * Free labels of a subcloud (`--label rack=r12`): what a site's command needs that dcmanager has no
 * field for (an ssh port, a jump host, a rack). Pure: text in, checked labels out.
 *
 * A key is what the exec driver names it by, `{label.KEY}` and `DCM_LABEL_<KEY>`, and what an
 * Ansible inventory makes a host variable of: so it is a lowercase identifier (the placeholders'
 * own alphabet, which keeps `${HOME}` a shell's), and `DCM_LABEL_<KEY>` is a valid variable name.
 */
import { UsageError } from './errors.js';

/** Labels as stored: key to value. */
export type Labels = Record<string, string>;
/** Changes asked for: a value sets the label, null removes it (`--label k=`). */
export type LabelChanges = Record<string, string | null>;
/** A selection: a value must be the label's, null means the subcloud has no such label. */
export type LabelSelector = Record<string, string | null>;

export const MAX_LABEL_KEY = 63;
export const MAX_LABEL_VALUE = 255;
const KEY = /^[a-z][a-z0-9_]*$/;

/** Why `key` cannot be a label's key, or null. */
export function labelKeyProblem(key: string): string | null {
  if (!KEY.test(key)) return 'a key is a lowercase letter, then lowercase letters, digits or _';
  if (key.length > MAX_LABEL_KEY) return `a key is at most ${MAX_LABEL_KEY} characters`;
  return null;
}

/** Why `value` cannot be a label's value, or null. */
export function labelValueProblem(value: string): string | null {
  if (value.length > MAX_LABEL_VALUE) return `a value is at most ${MAX_LABEL_VALUE} characters`;
  // A newline or tab would split a `-f value` row; `;` separates labels in the `labels` column.
  if (/\p{Cc}/u.test(value)) return 'a value may not hold control characters (newline, tab, NUL…)';
  if (value.includes(';')) return "a value may not hold ';' (it separates labels)";
  if (value !== value.trim()) return 'a value may not start or end with a space';
  return null;
}

function shown(item: string): string {
  return `'${JSON.stringify(item.length > 60 ? `${item.slice(0, 57)}...` : item).slice(1, -1)}'`;
}

/** One `KEY=VALUE` (an empty VALUE: null), checked; `how` is said when `=` is missing. */
function parseOne(item: string, how: string): [string, string | null] {
  const eq = item.indexOf('=');
  if (eq < 0) throw new UsageError(`invalid label ${shown(item)}: use ${how}`);
  const key = item.slice(0, eq);
  const value = item.slice(eq + 1);
  const problem = labelKeyProblem(key) ?? (value === '' ? null : labelValueProblem(value));
  if (problem) throw new UsageError(`invalid label ${shown(item)}: ${problem}`);
  return [key, value === '' ? null : value];
}

/** `--label k=v` (repeatable) on add and update: `k=` removes the label; a later one wins. */
export function parseLabelChanges(items: readonly string[]): LabelChanges {
  const out: LabelChanges = {};
  for (const item of items) {
    const [k, v] = parseOne(item, 'KEY=VALUE, or KEY= to remove it');
    out[k] = v;
  }
  return out;
}

/** `--label k=v` (repeatable) on list, inventory and strategy create: every one must hold. */
export function parseLabelSelector(items: readonly string[]): LabelSelector {
  const out: LabelSelector = {};
  for (const item of items) {
    const [k, v] = parseOne(item, 'KEY=VALUE, or KEY= for the subclouds without it');
    if (k in out && out[k] !== v) throw new UsageError(`invalid label ${shown(item)}: ${k} is selected twice with different values`);
    out[k] = v;
  }
  return out;
}

/** The import column `labels`: `k=v;k2=v2` (blank items are skipped). */
export function parseLabelList(text: string): LabelChanges {
  return parseLabelChanges(text.split(';').map((x) => x.trim()).filter((x) => x !== ''));
}

/** `k=v;k2=v2`, keys sorted: how `subcloud show` prints them and the import column reads them. */
export function formatLabels(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(';');
}

/** The stored `k=v;k2=v2` back to labels (values hold no `;`, keys no `=`). */
export function readLabels(text: string | null | undefined): Labels {
  const out: Labels = {};
  if (!text) return out;
  for (const item of text.split(';')) {
    const eq = item.indexOf('=');
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/** The environment variable a label reaches a run as. */
export function labelEnvName(key: string): string {
  return `DCM_LABEL_${key.toUpperCase()}`;
}
