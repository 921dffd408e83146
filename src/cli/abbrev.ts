/**
 * argparse's `allow_abbrev`: dcmanager's client takes any unique prefix of a long option
 * (`--max-parallel 3`, `--det`, `--form json`), so scripts written for it have them. Commander has
 * no such rule, so before it parses, this pass walks argv along the command path and spells every
 * abbreviated long option out in full, against the options of the command that would parse it
 * (the command's own and the global ones, as argparse resolves against the parser that is
 * parsing). An exact spelling always wins; a prefix of several options is a usage error listing
 * them; a prefix of none is left for commander to refuse with its suggestion.
 */
import type { Command, Option } from 'commander';
import { UsageError } from '../domain/errors.js';

interface Spelling {
  long: string;
  takesValue: boolean;
  hidden: boolean;
}

/** dcm accepts `--max_parallel_subclouds` and `--max-parallel-subclouds` for one option. */
const canonical = (long: string) => long.replace(/_/g, '-');

function spellingsOf(cmd: Command): Spelling[] {
  const out: Spelling[] = [];
  for (const o of cmd.options as (Option & { hidden?: boolean })[]) {
    if (o.long) out.push({ long: o.long, takesValue: o.required || o.optional, hidden: Boolean(o.hidden) });
  }
  // Commander's help option is not in `options`; argparse has `--help` on every parser.
  if (!out.some((s) => s.long === '--help')) out.push({ long: '--help', takesValue: false, hidden: false });
  return out;
}

function shortTakesValue(cmd: Command, ch: string): boolean | undefined {
  const o = (cmd.options as Option[]).find((x) => x.short === `-${ch}`);
  return o ? o.required || o.optional : undefined;
}

/** Options dcm adds that begin with one of dcmanager's client's options. */
const DCM_EXTENSIONS = new Set(['--sysadmin-password-file']);

/**
 * Options of dcm's own added after scripts were written for dcm as it was (the rollout's gates,
 * probes and audits): they take no prefix an older option had, so `--g canary` still means
 * `--group` beside `--gate-check`, and `--re` is ambiguous as it was.
 */
const LATER_OPTIONS = new Set([
  '--gate-check', '--stage-gate', '--stage-max-failures', '--probe', '--skip-unreachable', '--defer-delay', '--defer-until', '--require-audit', '--sim-audit',
  '--audit-disagrees-ok',
]);

/** The option `name` stands for on `cmd`: itself, the one it is a unique prefix of, or undefined. */
export function resolveLong(cmd: Command, name: string): Spelling | undefined {
  const all = spellingsOf(cmd);
  const exact = all.find((s) => s.long === name);
  if (exact) return exact;
  const matches = all.filter((s) => s.long.startsWith(name));
  if (matches.length === 0) return undefined;
  // Spellings of one option (a dashed alias beside an underscore one) are one candidate.
  const groups = new Map<string, Spelling[]>();
  for (const m of matches) groups.set(canonical(m.long), [...(groups.get(canonical(m.long)) ?? []), m]);
  if (groups.size === 1) {
    const group = matches;
    return group.find((s) => !s.hidden) ?? group[0];
  }
  const shown = [...groups.values()].map((g) => (g.find((s) => !s.hidden) ?? g[0]).long);
  // dcm's own longer spelling of one of dcmanager's options (`--sysadmin-password-file` beside
  // `--sysadmin-password`) takes no prefix from it: a script written for dcmanager's client, which
  // has only the shorter option, means that one by `--sysadmin`.
  const older = shown.filter((c) => !LATER_OPTIONS.has(c));
  const candidates = older.length > 0 ? older : shown;
  const theirs = candidates.filter((c) => !(DCM_EXTENSIONS.has(c) && candidates.some((o) => o !== c && c.startsWith(o))));
  if (theirs.length === 1) return matches.find((s) => s.long === theirs[0]);
  throw new UsageError(`ambiguous option: ${name} could match ${candidates.join(', ')}`);
}

function subcommand(cmd: Command, word: string): Command | undefined {
  return cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
}

/** argv with every abbreviated long option written out; throws UsageError on an ambiguous one. */
export function expandAbbreviations(program: Command, argv: readonly string[]): string[] {
  const out: string[] = [];
  let cmd = program;
  // Once a positional argument of a leaf command is seen, later words are never subcommands.
  let leaf = cmd.commands.length === 0;
  for (let i = 0; i < argv.length; i++) {
    const tok = argv[i];
    if (tok === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (tok.startsWith('--') && tok.length > 2) {
      const eq = tok.indexOf('=');
      const name = eq < 0 ? tok : tok.slice(0, eq);
      const s = resolveLong(cmd, name);
      if (!s) {
        out.push(tok);
        continue;
      }
      out.push(eq < 0 ? s.long : `${s.long}${tok.slice(eq)}`);
      // The next word is this option's value, whatever it looks like (`--description -x`).
      if (s.takesValue && eq < 0 && i + 1 < argv.length) out.push(argv[++i]);
      continue;
    }
    if (tok.startsWith('-') && tok.length > 1) {
      out.push(tok);
      // `-f json`, `-c name`, `-qf json`: a short option that takes a value takes the next word
      // unless its value is in the same word.
      for (let k = 1; k < tok.length; k++) {
        const takes = shortTakesValue(cmd, tok[k]);
        if (takes === undefined) break;
        if (takes) {
          if (k === tok.length - 1 && i + 1 < argv.length) out.push(argv[++i]);
          break;
        }
      }
      continue;
    }
    out.push(tok);
    const sub = leaf ? undefined : subcommand(cmd, tok);
    if (sub) {
      cmd = sub;
      leaf = sub.commands.length === 0;
    } else {
      leaf = true;
    }
  }
  return out;
}
