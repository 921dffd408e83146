/**
 * The exec driver's run logs as `strategy-step logs` finds them (SPEC §7.2): one file per run,
 * `<attempt>-<state>.log` in the subcloud's folder, and where those folders are. Pure: names in,
 * paths and runs in run order out.
 *
 * Two layouts, and a strategy keeps the one it was created with (`log_layout` in its extra args),
 * so that an apply of a strategy created by an earlier dcm still finds, and adopts, the runs that
 * earlier dcm left going:
 * - 1 (no version stored): `DIR/<cloud>/<attempt>-<state>`, names as `logComponent` writes them.
 *   Every strategy shares the folders; a later one's runs overwrite an earlier one's.
 * - 2: `DIR/<strategy id>/<cloud>/<attempt>-<state>`, names as `logSlug` writes them. Each
 *   strategy has a folder of its own, kept after `strategy delete`: the logs are its record.
 */
import path from 'node:path';
import { isPgUrl, pgDatabaseName } from './db-url.js';

/** A run's log as found in the subcloud's folder. */
export interface LogRun {
  /** The file's name inside the subcloud's folder. */
  file: string;
  attempt: number;
  /** The state's name when it is one of the known states, else the name as the file spells it. */
  state: string;
  /** The state's place among the type's states (runs sort by it); -1 when unknown. */
  index: number;
}

/**
 * A name as one path component of layout 1 (strategies created before layout 2). The encoding is
 * injective (two names never share a component) and its result is never `.`, `..`, hidden, or
 * holds `/`: `%`, `/` and control characters are percent-encoded (`a/b` → `a%2Fb`, `%` → `%25`),
 * and so is a leading `.` (`..` → `%2E.`). Everything else is kept, so most names read as they are.
 */
export function logComponent(name: string): string {
  const safe = name.replace(/[%/\p{Cc}]/gu, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  return safe.startsWith('.') ? `%2E${safe.slice(1)}` : safe;
}

/**
 * A name as one path component of layout 2: no spaces, and of ASCII nothing but letters, digits,
 * `.`, `-`, `_` and `%`, so that a path can be typed or pasted into a shell as it is. A space is
 * `-`, a `-` is `_`; every other ASCII character but letters, digits and `.` is percent-encoded
 * (`_` → `%5F`, `%` → `%25`, `/` → `%2F`), and so is a leading `.`. Non-ASCII characters are kept (a name in
 * another script stays readable), except white space and invisible ones (NBSP, zero-width and
 * direction marks, C1 controls, BOM): their UTF-8 bytes are percent-encoded. The mapping is
 * injective (each output character decodes one way), so two names never share a file:
 * `pre check` → `pre-check`, `pre-check` → `pre_check`, `pre_check` → `pre%5Fcheck`. The set kept
 * is fixed, not a Unicode property, so that a newer Node (a newer Unicode) writes and reads the
 * same names.
 */
export function logSlug(name: string): string {
  let out = '';
  for (const ch of name) {
    if (/^[A-Za-z0-9.]$/.test(ch)) out += ch;
    else if (ch === ' ') out += '-';
    else if (ch === '-') out += '_';
    else if (ch.codePointAt(0)! > 0x7f && !invisible(ch.codePointAt(0)!)) out += ch;
    else out += percent(ch);
  }
  return out.startsWith('.') ? `%2E${out.slice(1)}` : out;
}

/**
 * The name a slug was made from (logSlug's inverse), or null for a name logSlug never writes (a
 * file some other program put there).
 */
export function unslug(slug: string): string | null {
  const bytes: number[] = [];
  let out = '';
  const flush = (): boolean => {
    if (!bytes.length) return true;
    try {
      out += new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes.splice(0)));
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < slug.length; ) {
    const hex = /^%([0-9A-F]{2})/.exec(slug.slice(i, i + 3));
    if (hex) {
      bytes.push(parseInt(hex[1], 16));
      i += 3;
      continue;
    }
    if (!flush()) return null;
    const unit = /^%u(D[89A-F][0-9A-F]{2})/.exec(slug.slice(i, i + 6));
    if (unit) {
      out += String.fromCharCode(parseInt(unit[1], 16));
      i += 6;
      continue;
    }
    const ch = String.fromCodePoint(slug.codePointAt(i)!);
    out += ch === '-' ? ' ' : ch === '_' ? '-' : ch;
    i += ch.length;
  }
  if (!flush()) return null;
  return logSlug(out) === slug ? out : null;
}

/**
 * Non-ASCII code points written percent-encoded: white space, invisible format characters (Unicode
 * 15's `Cf`, as a fixed list), and lone surrogates.
 */
const INVISIBLE: readonly [number, number][] = [
  [0x80, 0xa0], // C1 controls, NBSP
  [0xad, 0xad], // soft hyphen
  [0x600, 0x605], [0x61c, 0x61c], [0x6dd, 0x6dd], [0x70f, 0x70f], [0x890, 0x891], [0x8e2, 0x8e2],
  [0x1680, 0x1680], [0x180e, 0x180e],
  [0x2000, 0x200f], // spaces, zero-width, direction marks
  [0x2028, 0x202f], [0x205f, 0x206f], [0x3000, 0x3000],
  [0xd800, 0xdfff], // lone surrogates
  [0xfeff, 0xfeff], [0xfff9, 0xfffb],
  [0x110bd, 0x110bd], [0x110cd, 0x110cd], [0x13430, 0x1343f], [0x1bca0, 0x1bca3], [0x1d173, 0x1d17a],
  [0xe0000, 0xe007f], // tags
];

function invisible(cp: number): boolean {
  return INVISIBLE.some(([lo, hi]) => cp >= lo && cp <= hi);
}

function percent(ch: string): string {
  const cp = ch.codePointAt(0)!;
  // A lone surrogate has no UTF-8 bytes of its own (an encoder would write U+FFFD's): its code unit.
  if (cp >= 0xd800 && cp <= 0xdfff) return `%u${cp.toString(16).toUpperCase()}`;
  return [...new TextEncoder().encode(ch)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

/** The layout new strategies get. */
export const LOG_LAYOUT = 2;

export type LayoutVersion = 1 | 2;

/** Where one strategy's runs write: its log folder, its layout, its id. */
export interface LogLayout {
  /** Absolute: `--log-dir`, or the database path + `.logs`. */
  dir: string;
  version: LayoutVersion;
  /** The strategy's id (strategyIdOf); only layout 2 names a folder after it. */
  strategy: string;
}

/**
 * A strategy's id: the digits of its created_at (`2026-12-01 17:53:53.123456` →
 * `20261201175353123456`). The strategy row's own id is always 1 (one strategy at a time), so it
 * tells no two strategies apart; created_at does, to the microsecond, and it is the `<strategy>`
 * part of every run's DCM_RUN_ID.
 */
export function strategyIdOf(createdAt: string): string {
  return createdAt.replace(/\D/g, '');
}

/**
 * A strategy id as `--strategy` gives it (the id, or the created_at it is made of), or null when
 * the text is neither: never a path (`..`, `a/b`) to look in.
 */
export function parseStrategyId(text: string): string | null {
  if (/^\d{20}$/.test(text)) return text;
  if (/^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}\.\d{6}$/.test(text)) return strategyIdOf(text);
  return null;
}

/** Whether a folder's name is a strategy's (layout 2) rather than a subcloud's (layout 1). */
export function isStrategyFolderName(name: string): boolean {
  return /^\d{20}$/.test(name);
}

/** The layout a stored strategy's runs use: the version stored at create, else 1 (an earlier dcm's). */
export function layoutOf(strategy: { created_at: string; extra: Record<string, unknown> }, dbPath: string): LogLayout {
  const dir = typeof strategy.extra.log_dir === 'string' && strategy.extra.log_dir ? strategy.extra.log_dir : defaultLogDir(dbPath);
  return { dir: path.resolve(dir), version: strategy.extra.log_layout === 2 ? 2 : 1, strategy: strategyIdOf(strategy.created_at) };
}

/** How a layout writes a name as a path component. */
export function nameEncoder(version: LayoutVersion): (name: string) => string {
  return version === 1 ? logComponent : logSlug;
}

/** The folder of a strategy's runs in layout 2: `DIR/<strategy id>`. */
export function strategyLogDir(dir: string, strategy: string): string {
  return path.join(dir, strategy);
}

/** A subcloud's folder of run logs. */
export function cloudLogDir(layout: LogLayout, cloud: string): string {
  if (layout.version === 1) return path.join(layout.dir, logComponent(cloud));
  return path.join(strategyLogDir(layout.dir, layout.strategy), logSlug(cloud));
}

/** The longest file name a file system takes (ext4, xfs, btrfs, tmpfs: 255 bytes). */
export const MAX_NAME_BYTES = 255;

/** The longest run file name around a state's component: the attempt (up to 6 digits), `-`, `.status`. */
const RUN_FILE_EXTRA = '999999-'.length + '.status'.length;

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

/**
 * Why the exec driver could not make its run files for this subcloud (`kind` 'cloud') or state
 * ('state'), or null: the folder or file name would pass the file system's 255-byte limit.
 */
export function logNameProblem(kind: 'cloud' | 'state', name: string, version: LayoutVersion = LOG_LAYOUT): string | null {
  const bytes = utf8Length(nameEncoder(version)(name)) + (kind === 'state' ? RUN_FILE_EXTRA : 0);
  if (bytes <= MAX_NAME_BYTES) return null;
  const what = kind === 'cloud' ? 'its log folder name' : 'its run log file names';
  return `${what} would be ${bytes} bytes, over the file system's limit of ${MAX_NAME_BYTES}`;
}

/**
 * The folder of run logs when the strategy names none: beside the database file; for a database
 * on a PostgreSQL server, `<database name>.logs` in the folder the strategy is created in (create
 * stores it resolved, so every later command finds it wherever it runs). The logs of a run stay
 * on the host that ran it.
 */
export function defaultLogDir(dbPath: string): string {
  if (isPgUrl(dbPath)) return `${(pgDatabaseName(dbPath) ?? 'dcm').replace(/[/\\]/g, '_')}.logs`;
  return `${dbPath}.logs`;
}

/**
 * Where a run's files go, without their ending (the log adds `.log`):
 * `<cloud folder>/<attempt>-<state>`. One function for the driver that writes them and the
 * commands that read them.
 */
export function runBase(layout: LogLayout, cloud: string, attempt: number, state: string): string {
  return path.join(cloudLogDir(layout, cloud), `${attempt}-${nameEncoder(layout.version)(state)}`);
}

const LOG_NAME = /^(\d+)-(.+)\.log$/;

/**
 * The run logs among a folder's file names, in run order: by the state's place in the type, then
 * by attempt (a state's retries all run before the next state starts); logs of states the type
 * does not have (an earlier strategy's) come last, by name.
 */
export function logRuns(names: readonly string[], states: readonly string[], version: LayoutVersion = 1): LogRun[] {
  const encode = nameEncoder(version);
  const byComponent = new Map(states.map((s, i) => [encode(s), { state: s, index: i }]));
  const runs: LogRun[] = [];
  for (const file of names) {
    const m = LOG_NAME.exec(file);
    if (!m) continue;
    const known = byComponent.get(m[2]);
    // A state the given ones lack (an earlier strategy's custom state): named as it was, when the
    // layout can tell.
    const name = known?.state ?? (version === 2 ? (unslug(m[2]) ?? m[2]) : m[2]);
    runs.push({ file, attempt: Number(m[1]), state: name, index: known?.index ?? -1 });
  }
  const rank = (r: LogRun) => (r.index < 0 ? Number.MAX_SAFE_INTEGER : r.index);
  return runs.sort((a, b) => rank(a) - rank(b) || (a.index < 0 ? a.state.localeCompare(b.state) : 0) || a.attempt - b.attempt);
}

export function selectRuns(runs: readonly LogRun[], filter: { state?: string; attempt?: number }): LogRun[] {
  return runs.filter(
    (r) => (filter.state === undefined || r.state === filter.state) && (filter.attempt === undefined || r.attempt === filter.attempt),
  );
}

/** The line that separates runs when several are printed, in the manner of `tail`. */
export function runHeader(r: Pick<LogRun, 'attempt' | 'state'>): string {
  return `==> attempt ${r.attempt}, ${r.state} <==`;
}

/** `'a', 'b', 'c'`: state names hold spaces, so each is quoted. */
export function quoteList(names: readonly string[]): string {
  return names.map((n) => `'${n}'`).join(', ');
}
