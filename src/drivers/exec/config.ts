/**
 * The exec driver's config file (SPEC §7.2), YAML or JSON, checked once at create and stored with
 * the strategy in a resolved form: one entry per state, in the type's order (for `custom`, the
 * file's order), every default applied and `cwd` made absolute. Pure: the caller reads the file.
 */
import path from 'node:path';
import { isScalar, LineCounter, parseDocument, visit } from 'yaml';
import { UsageError } from '../../domain/errors.js';
import { durationProblem, parseDuration, parseDurationRange } from '../../domain/durations.js';
import { quotedPlaceholders, unknownPlaceholders } from './placeholders.js';
import { nameProblem, quoteName } from '../../domain/inventory.js';
import { logNameProblem } from '../../domain/logs.js';

export interface StateSpec {
  state: string;
  /** A list runs directly; a string runs through /bin/sh -c with values shell-quoted. */
  run: string[] | string;
  timeoutMs: number;
  retries: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  killGraceMs: number;
  env: Record<string, string>;
  /** Absolute; placeholders allowed. */
  cwd: string;
  /**
   * A regular expression over a failed run's output: its last match (its first group, if it has
   * one) is the failure's reason instead of the output's last line. Absent in configs stored
   * before it existed.
   */
  reason?: string;
  /**
   * `on_lost_host: rerun`: a run of this state whose host is lost (several hosts) runs again once
   * it cannot be going by its host's own rules, at least once (the site's DCM_FENCE check makes
   * that safe). Absent (`hold`, the default): it is held as of unknown outcome for the operator.
   */
  rerunOnLostHost?: boolean;
}

export interface ExecConfig {
  states: StateSpec[];
  /**
   * The site's audit (top-level `audit`): a command that prints the site's state as JSON
   * (domain/audit.ts), run after each subcloud's last state and by `subcloud audit`. Its `state`
   * is `audit`; its timeout defaults to 1m, not the states' 1h.
   */
  audit?: StateSpec;
  /** The stage gate's health command (`--stage-gate check`), run through /bin/sh -c between stages. */
  gate_check?: string;
  /**
   * `on_event`: told of a stage held, the strategy failed or complete, a worker taken over, with the
   * event as JSON on stdin (orchestrator/notify.ts); a string through /bin/sh -c, or a list run
   * directly, in the config's folder.
   */
  on_event?: { run: string | string[]; cwd: string };
  /**
   * `probe`: a command that exits 0 when the site answers (`dcm subcloud probe`, `strategy create
   * --probe`), with a state's keys and placeholders; absent when the config has none.
   */
  probe?: StateSpec;
  /** `defer_exit_codes`: a state's exit codes that defer its step rather than fail it (default [75]). */
  deferExitCodes?: number[];
  /**
   * `defer_on_timeout: true`: a state that runs past its timeout defers its step as exit 75 does (a
   * site that does not answer in time), instead of spending its retries and failing.
   */
  deferOnTimeout?: boolean;
  /**
   * `metrics_textfile`: the Prometheus text file apply keeps up to date (commands/metrics-file.ts),
   * relative to the config's folder; `apply --metrics-textfile` wins.
   */
  metrics_textfile?: string;
  /**
   * `fail_exit_codes`: a state's exit codes that fail its step at once, its retries left unused
   * (issue 49: an ssh recipe's "refused": a wrong key or host key, which no retry mends).
   */
  failExitCodes?: number[];
}

/** The keys an `audit` entry may have: a command's, without the retry and reason settings of a state. */
export const AUDIT_KEYS = ['run', 'timeout', 'kill_grace', 'env', 'cwd'];
const AUDIT_TIMEOUT = '1m';

/** The top level's keys (config-keys.ts documents each; its test holds the two lists together). */
export const TOP_KEYS = ['defaults', 'states', 'probe', 'defer_exit_codes', 'defer_on_timeout', 'fail_exit_codes', 'audit', 'gate_check', 'on_event', 'metrics_textfile'];

/** An entry's keys: a state's, and `defaults`' (all but run) and `probe`'s. */
export const KEYS = ['run', 'timeout', 'retries', 'backoff', 'kill_grace', 'env', 'cwd', 'reason', 'on_lost_host'];

type Entry = Record<string, unknown>;

/** Where parseConfigText keeps the file order of `states`. */
const STATE_ORDER = '\u0000state order';

function toPlain(v: unknown): unknown {
  if (v instanceof Map) return Object.fromEntries([...v.entries()].map(([k, x]) => [String(k), toPlain(x)]));
  if (Array.isArray(v)) return v.map(toPlain);
  return v;
}

function isObject(v: unknown): v is Entry {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Parse YAML or JSON (YAML's superset) with mappings as Maps, turned into plain objects except
 * for the order of `states`, kept apart: a plain object would put a state named "10" first.
 */
export function parseConfigText(text: string, file: string): unknown {
  const fail = (msg: string): never => {
    throw new UsageError(`exec config ${file}: not valid YAML or JSON: ${msg}`);
  };
  let doc: unknown;
  try {
    // The parser's own duplicate-key check compares each key with every earlier one (10k env keys
    // took 1.2 s, 40k 12 s); a Set per mapping finds duplicates in linear time.
    const lines = new LineCounter();
    const parsed = parseDocument(text, { uniqueKeys: false, lineCounter: lines });
    if (parsed.errors.length) fail(parsed.errors[0].message.split('\n')[0]);
    visit(parsed, {
      Map(_, map) {
        const seen = new Set<string>();
        for (const pair of map.items) {
          const key = isScalar(pair.key) ? String(pair.key.value) : JSON.stringify(pair.key);
          if (seen.has(key)) {
            const at = isScalar(pair.key) && pair.key.range ? lines.linePos(pair.key.range[0]) : null;
            fail(`Map keys must be unique${at ? ` at line ${at.line}, column ${at.col}` : ''}: ${JSON.stringify(key)}`);
          }
          seen.add(key);
        }
      },
    });
    doc = parsed.toJS({ mapAsMap: true }) as unknown;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    fail(String((err as Error).message).split('\n')[0]);
  }
  const order = doc instanceof Map && doc.get('states') instanceof Map ? [...(doc.get('states') as Map<unknown, unknown>).keys()].map(String) : null;
  const plain = toPlain(doc);
  if (order && isObject(plain)) (plain as Entry)[STATE_ORDER] = order;
  return plain;
}

/**
 * Check a parsed config against the type's states (`null` for custom: the config's own states
 * define them) and resolve it. Every error names the state (or `defaults`) and the key.
 */
export function resolveConfig(doc: unknown, file: string, typeStates: readonly string[] | null): ExecConfig {
  const bad = (where: string, msg: string): never => {
    throw new UsageError(`exec config ${file}: ${where}: ${msg}`);
  };
  if (!isObject(doc)) bad('top level', 'expected a mapping with "states" (and optional "defaults")');
  const top = doc as Entry;
  for (const k of Object.keys(top)) if (!TOP_KEYS.includes(k) && k !== STATE_ORDER) bad(k, `unknown key: use ${TOP_KEYS.join(', ')}`);
  if ('gate_check' in top && (typeof top.gate_check !== 'string' || top.gate_check.trim() === '')) bad('gate_check', 'expected a command (a string)');
  const defaults = top.defaults ?? {};
  if (!isObject(defaults)) bad('defaults', 'expected a mapping');
  if (!isObject(top.states)) bad('states', 'expected a mapping of state name to command');
  const states = top.states as Entry;
  const base = path.dirname(path.resolve(file));

  const names = Array.isArray(top[STATE_ORDER]) ? (top[STATE_ORDER] as string[]) : Object.keys(states);
  if (typeStates === null) {
    if (names.includes('*')) bad('states: "*"', 'not allowed with --type custom: name every state');
    if (names.length === 0) bad('states', 'a custom type needs at least one state');
    for (const n of names) {
      if (n === 'complete' || n === 'initial' || n === 'failed' || n === 'aborted' || n === 'deferred') bad(`state "${n}"`, 'a reserved step state');
      // Checked as subcloud names are; and a name must fit in its run files' names.
      const problem = nameProblem(n) ?? logNameProblem('state', n);
      if (problem) bad(`state ${quoteName(n)}`, problem);
    }
  } else {
    for (const n of names) {
      if (n !== '*' && !typeStates.includes(n)) bad(`state "${n}"`, `not a state of this type; its states are: ${typeStates.join(', ')}`);
    }
    for (const s of typeStates) {
      if (!(s in states) && !('*' in states)) bad(`state "${s}"`, 'missing: give a command for it, or a "*" entry');
    }
  }
  const order = typeStates ?? names;
  const resolved = order.map((s) =>
    s in states ? resolveEntry(s, `state "${s}"`, states[s], defaults as Entry, base, bad) : resolveEntry(s, 'state "*"', states['*'], defaults as Entry, base, bad),
  );
  // Every entry is checked, even one no state uses, and a bad default even when overridden.
  if ('*' in states) resolveEntry('*', 'state "*"', states['*'], defaults as Entry, base, bad);
  resolveEntry('defaults', 'defaults', { run: 'true' }, defaults as Entry, base, bad);
  const config: ExecConfig = { states: resolved };
  if (typeof top.gate_check === 'string') config.gate_check = top.gate_check;
  if (top.metrics_textfile !== undefined) {
    if (typeof top.metrics_textfile !== 'string' || top.metrics_textfile.trim() === '') bad('metrics_textfile', 'expected a file path (a string)');
    config.metrics_textfile = path.resolve(base, top.metrics_textfile as string);
  }
  if (top.on_event !== undefined) {
    const run = top.on_event;
    const ok = (typeof run === 'string' && run.trim() !== '') || (Array.isArray(run) && run.length > 0 && run.every((a) => typeof a === 'string') && run[0] !== '');
    if (!ok) bad('on_event', 'expected a command: a string (run by /bin/sh -c) or a list (run directly)');
    config.on_event = { run: run as string | string[], cwd: base };
  }
  if (top.audit !== undefined) config.audit = resolveAudit(top.audit, defaults as Entry, base, bad);
  // Its own defaults apply as a state's do: a probe is one more command run against the site.
  if (top.probe !== undefined) config.probe = resolveProbe(top, defaults as Entry, base, bad);
  if (top.defer_exit_codes !== undefined) config.deferExitCodes = exitCodes('defer_exit_codes', top.defer_exit_codes, bad);
  if (top.fail_exit_codes !== undefined) {
    config.failExitCodes = exitCodes('fail_exit_codes', top.fail_exit_codes, bad);
    const both = config.failExitCodes.filter((c) => (config.deferExitCodes ?? [75]).includes(c));
    if (both.length) bad('fail_exit_codes', `exit ${both.join(', ')} is in defer_exit_codes too: a code either defers its step or fails it`);
  }
  if (top.defer_on_timeout !== undefined) {
    if (typeof top.defer_on_timeout !== 'boolean') bad('defer_on_timeout', `expected true or false, not ${JSON.stringify(top.defer_on_timeout)}`);
    if (top.defer_on_timeout) config.deferOnTimeout = true;
  }
  return config;
}

/**
 * One command of a config file read by a command that has no strategy (`subcloud audit`,
 * `subcloud probe`): its entry resolved with the file's defaults; an error if the file has none.
 * The file's `states`, if any, are a strategy's business and are not checked here.
 */
function commandOfConfig(doc: unknown, file: string, key: 'audit' | 'probe', missing: string): StateSpec {
  const bad = (where: string, msg: string): never => {
    throw new UsageError(`exec config ${file}: ${where}: ${msg}`);
  };
  if (!isObject(doc)) bad('top level', `expected a mapping with "${key}" (and optional "defaults")`);
  const top = doc as Entry;
  for (const k of Object.keys(top)) if (!TOP_KEYS.includes(k) && k !== STATE_ORDER) bad(k, `unknown key: use ${TOP_KEYS.join(', ')}`);
  if (top[key] === undefined) bad(key, `missing: ${missing}`);
  const defaults = top.defaults ?? {};
  if (!isObject(defaults)) bad('defaults', 'expected a mapping');
  const base = path.dirname(path.resolve(file));
  return key === 'audit' ? resolveAudit(top.audit, defaults as Entry, base, bad) : resolveProbe(top, defaults as Entry, base, bad)!;
}

/** The audit alone, for `subcloud audit --exec-config FILE`. */
export const resolveAuditConfig = (doc: unknown, file: string): StateSpec =>
  commandOfConfig(doc, file, 'audit', "give the command that prints the site's state as JSON");

/** The probe alone, for `subcloud probe --driver exec --exec-config FILE`. */
export const probeOfConfig = (doc: unknown, file: string): StateSpec =>
  commandOfConfig(doc, file, 'probe', 'give the command that tells whether a site answers');

/** `audit`: a command or a mapping of AUDIT_KEYS; the defaults' env, cwd and kill_grace apply. */
function resolveAudit(raw: unknown, defaults: Entry, base: string, bad: (where: string, msg: string) => never): StateSpec {
  if (isObject(raw)) for (const k of Object.keys(raw)) if (!AUDIT_KEYS.includes(k)) bad(`audit: ${k}`, `unknown key; use ${AUDIT_KEYS.join(', ')}`);
  // A state's timeout (1h by default) is no audit's: an audit that hangs holds the subcloud's slot.
  const own: Entry = {};
  for (const k of ['env', 'cwd', 'kill_grace']) if (k in defaults) own[k] = defaults[k];
  own.timeout = AUDIT_TIMEOUT;
  return resolveEntry('audit', 'audit', raw, own, base, bad);
}

function resolveEntry(
  state: string,
  where: string,
  raw: unknown,
  defaults: Entry,
  base: string,
  bad: (where: string, msg: string) => never,
): StateSpec {
  const entry: Entry = Array.isArray(raw) || typeof raw === 'string' ? { run: raw } : isObject(raw) ? raw : bad(where, 'expected a command (a list or a string) or a mapping with "run"');
  for (const k of Object.keys(defaults)) {
    if (!KEYS.includes(k) || k === 'run') bad(`defaults: ${k}`, `unknown key; a default may set ${KEYS.slice(1).join(', ')}`);
  }
  for (const k of Object.keys(entry)) if (!KEYS.includes(k)) bad(`${where}: ${k}`, `unknown key; use ${KEYS.join(', ')}`);
  const get = (k: string) => (k in entry ? { v: entry[k], at: `${where}: ${k}` } : { v: defaults[k], at: `defaults: ${k}` });

  const placeholders = (text: string, at: string) => {
    const unknown = unknownPlaceholders(text);
    if (unknown.length) bad(at, `unknown placeholder {${unknown[0]}}`);
  };

  let run: string[] | string;
  const r = entry.run;
  if (typeof r === 'string') {
    if (!r.trim()) bad(`${where}: run`, 'an empty command');
    run = r;
    placeholders(r, `${where}: run`);
    const quoted = quotedPlaceholders(r)[0];
    if (quoted) {
      const q = quoted.quote;
      bad(`${where}: run`, `{${quoted.name}} inside ${q}…${q} quotes: a string command single-quotes each value itself, so write {${quoted.name}}, not ${q}{${quoted.name}}${q}`);
    }
  } else if (Array.isArray(r)) {
    if (r.length === 0) bad(`${where}: run`, 'an empty command');
    run = r.map((x) => {
      if (typeof x !== 'string' && typeof x !== 'number') bad(`${where}: run`, 'list items must be strings');
      placeholders(String(x), `${where}: run`);
      return String(x);
    });
  } else {
    run = bad(`${where}: run`, 'missing: a list (run directly) or a string (run by /bin/sh -c)');
  }

  const duration = (k: string, fallback: string, positive: boolean) => {
    const { v, at } = get(k);
    if (v === undefined) return parseDuration(fallback)!;
    // A YAML number (`timeout: 10`) is a duration without its unit, as the string "10" is.
    const problem = durationProblem(String(v), { unitRequired: true });
    if (problem) bad(at, `bad duration ${JSON.stringify(v)}: ${problem}${k === 'timeout' ? ', or none (no timeout)' : ''}`);
    const ms = parseDuration(String(v), { unitRequired: true });
    if (positive && ms! <= 0) bad(at, 'must be more than 0');
    return ms!;
  };
  // `none`: the state may go for ever (README "Several hosts": a run of it whose host is lost is
  // held as `unknown` for the operator, never run again blindly).
  const timeoutMs = get('timeout').v === 'none' ? Infinity : duration('timeout', '1h', true);
  const killGraceMs = duration('kill_grace', '10s', false);

  const rv = get('retries');
  const retries = rv.v === undefined ? 0 : Number(rv.v);
  if (rv.v !== undefined && (typeof rv.v !== 'number' || !Number.isInteger(retries) || retries < 0 || retries > 100)) {
    bad(rv.at, `bad retries ${JSON.stringify(rv.v)}: a whole number from 0 to 100`);
  }

  const bv = get('backoff');
  let backoff = { min: 5000, max: 300_000 };
  if (bv.v !== undefined) {
    const parsed = parseDurationRange(String(bv.v), { unitRequired: true });
    if (!parsed) bad(bv.at, `bad duration ${JSON.stringify(bv.v)}: MIN[..MAX] with units, e.g. 5s..5m`);
    backoff = parsed!;
  }

  const env: Record<string, string> = {};
  for (const source of [{ v: defaults.env, at: 'defaults: env' }, { v: entry.env, at: `${where}: env` }]) {
    if (source.v === undefined) continue;
    if (!isObject(source.v)) bad(source.at, 'expected a mapping of NAME: value');
    for (const [k, val] of Object.entries(source.v as Entry)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) bad(`${source.at}: ${k}`, 'not a valid variable name');
      if (typeof val !== 'string' && typeof val !== 'number' && typeof val !== 'boolean') bad(`${source.at}: ${k}`, 'expected a string');
      placeholders(String(val), `${source.at}: ${k}`);
      env[k] = String(val);
    }
  }

  const cv = get('cwd');
  if (cv.v !== undefined && typeof cv.v !== 'string') bad(cv.at, 'expected a path');
  const cwdText = (cv.v as string | undefined) ?? '.';
  placeholders(cwdText, cv.at);
  const cwd = path.resolve(base, cwdText);

  const rs = get('reason');
  let reason: string | undefined;
  if (rs.v !== undefined) {
    if (typeof rs.v !== 'string' || rs.v === '') bad(rs.at, 'expected a regular expression (a non-empty string)');
    try {
      new RegExp(rs.v as string, 'gm');
    } catch (err) {
      bad(rs.at, `not a regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`);
    }
    reason = rs.v as string;
  }

  const lv = get('on_lost_host');
  if (lv.v !== undefined && lv.v !== 'hold' && lv.v !== 'rerun') bad(lv.at, `bad on_lost_host ${JSON.stringify(lv.v)}: hold (the default) or rerun`);
  if (lv.v === 'rerun' && timeoutMs === Infinity) bad(lv.at, 'rerun needs a timeout: with timeout: none a run may be going for ever, and is held');

  const spec: StateSpec = { state, run, timeoutMs, retries, backoffMinMs: backoff.min, backoffMaxMs: backoff.max, killGraceMs, env, cwd };
  if (reason !== undefined) spec.reason = reason;
  if (lv.v === 'rerun') spec.rerunOnLostHost = true;
  return spec;
}

/**
 * `defer_exit_codes: [75, 69]`: exit codes (1..255) that mean "the site did not answer, try
 * later"; `fail_exit_codes: [77]`: those that mean "refused: no retry will mend it".
 */
function exitCodes(key: string, v: unknown, bad: (where: string, msg: string) => never): number[] {
  const list = Array.isArray(v) ? v : [v];
  if (list.length === 0) bad(key, key === 'defer_exit_codes' ? 'an empty list: leave the key out for the default [75]' : 'an empty list: leave the key out');
  return list.map((c) => {
    if (typeof c !== 'number' || !Number.isInteger(c) || c < 1 || c > 255) bad(key, `bad exit code ${JSON.stringify(c)}: a whole number from 1 to 255`);
    return c as number;
  });
}

/** A probe that sets no timeout (nor its defaults) gives up after this: a site that answers, answers fast. */
export const PROBE_TIMEOUT_MS = 30_000;

function resolveProbe(top: Entry, defaults: Entry, base: string, bad: (where: string, msg: string) => never): ExecConfig['probe'] {
  const spec = resolveEntry('probe', 'probe', top.probe, defaults, base, bad);
  const own = isObject(top.probe) && 'timeout' in top.probe;
  if (!own && defaults.timeout === undefined) spec.timeoutMs = PROBE_TIMEOUT_MS;
  return spec;
}
