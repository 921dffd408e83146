/**
 * `dcm completion bash|zsh`: a completion script generated from the commander program itself, so
 * every command, subcommand and option a future change adds completes without touching this file.
 * Values of options with a fixed set (formats, types, apply types, step states…) complete too.
 */
import { Argument, type Command, type Option } from './commander.js';
import { allStepStates } from '../domain/choices.js';
import { APPLY_TYPES, ENDPOINTS, STRATEGY_TYPES, SYNC_STATUSES } from '../domain/types.js';
import { FORMATS } from './output/options.js';
import type { Runner } from './runner.js';

export const SHELLS = ['bash', 'zsh'] as const;
export type Shell = (typeof SHELLS)[number];

/** Values of options whose set is fixed, by long flag (options with commander choices add theirs). */
const VALUES: Record<string, readonly string[]> = {
  '--format': FORMATS,
  '--type': STRATEGY_TYPES,
  '--subcloud-apply-type': APPLY_TYPES,
  '--update_apply_type': APPLY_TYPES,
  '--update-apply-type': APPLY_TYPES,
  '--management': ['managed', 'unmanaged'],
  '--availability': ['online', 'offline'],
  '--state': allStepStates(),
  '--sync': ['all', ...ENDPOINTS].flatMap((e) => SYNC_STATUSES.map((s) => `${e}=${s}`)),
  // soak takes any duration: one is offered to be edited.
  '--stage-gate': ['none', 'pause', 'check', 'soak=30m'],
};

/** What completes where: one entry per command path ('' is the program). */
export interface CompletionNode {
  path: string;
  commands: string[];
  /** Every spelling of every visible option (`-f`, `--format`). */
  options: string[];
  /** The spellings that take a value (the next word is the value). */
  takesValue: string[];
  /** Fixed values by option spelling. */
  values: Record<string, readonly string[]>;
  /** Option spellings whose value is a file name. */
  fileOptions: string[];
  /** Positional values: a fixed set, or file names. */
  positional: readonly string[] | 'files' | null;
}

function spellings(o: Option): string[] {
  return [o.short, o.long].filter((x): x is string => Boolean(x));
}

function takesValue(o: Option): boolean {
  return o.required || o.optional;
}

function isFileArg(flagsOrName: string): boolean {
  return /<[^>]*(file|path)[^>]*>|^(file|path)$/i.test(flagsOrName);
}

function visibleOptions(cmd: Command): Option[] {
  return cmd.options.filter((o) => !(o as Option & { hidden?: boolean }).hidden);
}

export function completionTree(program: Command): CompletionNode[] {
  const nodes: CompletionNode[] = [];
  const visit = (cmd: Command, path: string) => {
    // Global options (the program's) work at every level (globals.ts takes them out anywhere).
    const globals = visibleOptions(program).filter((o) => o.long !== '--version');
    const opts = path === '' ? visibleOptions(cmd) : [...visibleOptions(cmd), ...globals];
    const values: Record<string, readonly string[]> = {};
    const fileOptions: string[] = [];
    for (const o of opts) {
      if (!takesValue(o)) continue;
      const fixed = o.argChoices ?? (o.long ? VALUES[o.long] : undefined);
      for (const s of spellings(o)) {
        if (fixed) values[s] = fixed;
        else if (isFileArg(o.flags)) fileOptions.push(s);
      }
    }
    const arg = cmd.registeredArguments[0];
    const positional = arg ? (arg.argChoices ?? (isFileArg(arg.name()) ? 'files' : null)) : null;
    nodes.push({
      path,
      commands: cmd.commands.flatMap((c) => [c.name(), ...c.aliases()]),
      options: [...new Set(opts.flatMap(spellings))],
      takesValue: [...new Set(opts.filter(takesValue).flatMap(spellings))],
      values,
      fileOptions,
      positional,
    });
    for (const c of cmd.commands) visit(c, path ? `${path} ${c.name()}` : c.name());
  };
  visit(program, '');
  return nodes;
}

/** Single-quoted for both shells. */
function q(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Case arms shared by both scripts: `kind|path` → space-separated words in REPLY. */
function dataFunction(nodes: CompletionNode[]): string {
  const arms: string[] = [];
  const arm = (key: string, words: readonly string[]) => {
    if (words.length) arms.push(`    ${q(key)}) REPLY=${q(words.join(' '))} ;;`);
  };
  for (const n of nodes) {
    arm(`cmds|${n.path}`, n.commands);
    arm(`opts|${n.path}`, n.options);
    arm(`takes|${n.path}`, n.takesValue);
    arm(`files|${n.path}`, n.fileOptions);
    if (n.positional === 'files') arm(`posfiles|${n.path}`, ['yes']);
  }
  return ['_dcm_data() {', '  REPLY=', '  case "$1|$2" in', ...arms, '  esac', '}'].join('\n');
}

/** Fixed values, one per line (they may hold spaces: `pre check`), keyed by `path|option`. */
function valuesFunction(nodes: CompletionNode[]): string {
  const arms: string[] = [];
  for (const n of nodes) {
    for (const [flag, vals] of Object.entries(n.values)) arms.push(`    ${q(`${n.path}|${flag}`)}) REPLY=${q(vals.join('\n'))} ;;`);
    if (Array.isArray(n.positional)) arms.push(`    ${q(`${n.path}|`)}) REPLY=${q(n.positional.join('\n'))} ;;`);
  }
  return ['_dcm_values() {', '  REPLY=', '  case "$1|$2" in', ...arms, '  esac', '}'].join('\n');
}

function bash(nodes: CompletionNode[]): string {
  return `# bash completion for dcm, generated by \`dcm completion bash\`.
# Load it with: source <(dcm completion bash)
${dataFunction(nodes)}
${valuesFunction(nodes)}
_dcm_in() { # is word $1 among the space-separated words $2?
  [[ " $2 " == *" $1 "* ]]
}
_dcm_add() { # offer each line of $2 that starts with $1 (quoted for the command line)
  local line esc
  while IFS= read -r line; do
    [[ -z "$line" ]] && continue
    printf -v esc '%q' "$line"
    if [[ "$line" == "$1"* || "$esc" == "$1"* ]]; then COMPREPLY+=("$esc"); fi
  done <<< "$2"
}
_dcm() {
  local cur="\${COMP_WORDS[COMP_CWORD]-}" prev="" cmdpath="" word i=1
  COMPREPLY=()
  # --opt=value: bash splits it at '=' (COMP_WORDBREAKS) into --opt, =, value.
  if [[ "$cur" == "=" ]]; then cur=""; prev="\${COMP_WORDS[COMP_CWORD-1]}"
  elif (( COMP_CWORD >= 2 )) && [[ "\${COMP_WORDS[COMP_CWORD-1]}" == "=" ]]; then prev="\${COMP_WORDS[COMP_CWORD-2]}"
  elif (( COMP_CWORD >= 1 )); then prev="\${COMP_WORDS[COMP_CWORD-1]}"; fi
  # The command path: the words that name commands, skipping options and their values.
  while (( i < COMP_CWORD )); do
    word="\${COMP_WORDS[i]}"
    if [[ "\${COMP_WORDS[i+1]-}" == "=" ]]; then
      i=$((i+3)); continue
    elif [[ "$word" == -* ]]; then
      _dcm_data takes "$cmdpath"
      if _dcm_in "$word" "$REPLY"; then i=$((i+1)); fi
    else
      _dcm_data cmds "$cmdpath"
      if _dcm_in "$word" "$REPLY"; then cmdpath="\${cmdpath:+$cmdpath }$word"; fi
    fi
    i=$((i+1))
  done
  if [[ "$prev" == -* ]]; then
    _dcm_data takes "$cmdpath"
    if _dcm_in "$prev" "$REPLY"; then
      _dcm_values "$cmdpath" "$prev"
      if [[ -n "$REPLY" ]]; then _dcm_add "$cur" "$REPLY"; return 0; fi
      _dcm_data files "$cmdpath"
      if _dcm_in "$prev" "$REPLY"; then compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); fi
      return 0
    fi
  fi
  if [[ "$cur" == -* ]]; then
    _dcm_data opts "$cmdpath"
    COMPREPLY=($(compgen -W "$REPLY" -- "$cur"))
    return 0
  fi
  _dcm_data cmds "$cmdpath"
  if [[ -n "$REPLY" ]]; then COMPREPLY=($(compgen -W "$REPLY" -- "$cur")); return 0; fi
  _dcm_values "$cmdpath" ""
  if [[ -n "$REPLY" ]]; then _dcm_add "$cur" "$REPLY"; return 0; fi
  _dcm_data posfiles "$cmdpath"
  if [[ -n "$REPLY" ]]; then compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); fi
  return 0
}
complete -F _dcm dcm
`;
}

function zsh(nodes: CompletionNode[]): string {
  return `#compdef dcm
# zsh completion for dcm, generated by \`dcm completion zsh\`.
# Save it as _dcm in a directory of $fpath, or load it with: source <(dcm completion zsh)
${dataFunction(nodes)}
${valuesFunction(nodes)}
_dcm() {
  local cmdpath="" word cur prev REPLY
  local -i i=2
  cur=\${words[CURRENT]}
  prev=\${words[CURRENT-1]}
  while (( i < CURRENT )); do
    word=\${words[i]}
    if [[ $word == --*=* ]]; then
      :
    elif [[ $word == -* ]]; then
      _dcm_data takes "$cmdpath"
      if (( \${\${=REPLY}[(Ie)$word]} )); then (( i++ )); fi
    else
      _dcm_data cmds "$cmdpath"
      if (( \${\${=REPLY}[(Ie)$word]} )); then cmdpath=\${cmdpath:+$cmdpath }$word; fi
    fi
    (( i++ ))
  done
  if [[ $cur == --*=* ]]; then
    prev=\${cur%%=*}
    compset -P '*='
    cur=\${cur#*=}
  fi
  if [[ $prev == -* ]]; then
    _dcm_data takes "$cmdpath"
    if (( \${\${=REPLY}[(Ie)$prev]} )); then
      _dcm_values "$cmdpath" "$prev"
      if [[ -n $REPLY ]]; then compadd -- \${(f)REPLY}; return; fi
      _dcm_data files "$cmdpath"
      if (( \${\${=REPLY}[(Ie)$prev]} )); then _files; fi
      return
    fi
  fi
  if [[ $cur == -* ]]; then
    _dcm_data opts "$cmdpath"
    compadd -- \${=REPLY}
    return
  fi
  _dcm_data cmds "$cmdpath"
  if [[ -n $REPLY ]]; then compadd -- \${=REPLY}; return; fi
  _dcm_values "$cmdpath" ""
  if [[ -n $REPLY ]]; then compadd -- \${(f)REPLY}; return; fi
  _dcm_data posfiles "$cmdpath"
  if [[ -n $REPLY ]]; then _files; fi
}
if [[ $funcstack[1] == _dcm ]]; then
  _dcm "$@"
else
  compdef _dcm dcm
fi
`;
}

export function completionScript(program: Command, shell: Shell): string {
  const nodes = completionTree(program);
  return shell === 'bash' ? bash(nodes) : zsh(nodes);
}

export function registerCompletion(program: Command, run: Runner): void {
  program
    .command('completion')
    .description('print a shell completion script')
    .addArgument(new Argument('<shell>', SHELLS.join(' | ')).choices(SHELLS))
    .action((shell: Shell) => run(async () => ({ text: completionScript(program, shell) })));
}
