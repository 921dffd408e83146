/**
 * The commander program as plain data, for the generated reference and man page (`npm run docs`):
 * every command's usage, description, arguments, options and Examples, read from the same
 * definitions `dcm --help` prints. Loaded only by the docs script and its test, never by `dcm`.
 */
import type { Argument, Command, Option } from '../commander.js';
import { buildProgram } from '../program.js';
import { examplesFor, commandPath, OLD_CONFIG_NAME } from '../examples.js';
import { STRATEGY_TYPES, TYPES } from '../../domain/types.js';

export interface OptionDoc {
  /** As declared: `-f, --format <format>`. */
  flags: string;
  long: string | undefined;
  description: string;
  choices: readonly string[] | null;
  /** Shown only when the definition gives one (commander's own default text, or its value). */
  default: string | null;
  /** The option must be given (commander's requiredOption). */
  mandatory: boolean;
}

export interface ArgumentDoc {
  /** As the usage writes it: `<name...>`, `[file]`. */
  term: string;
  description: string;
  choices: readonly string[] | null;
}

export interface CommandDoc {
  /** Without the program's name: `subcloud add`; '' for the program. */
  path: string;
  usage: string;
  /** The summary when the command has one (the listing's line), else the description's first line. */
  summary: string;
  description: string;
  arguments: ArgumentDoc[];
  options: OptionDoc[];
  examples: string[];
  commands: CommandDoc[];
  /** Set on a top-level command that is another's under a second name: the other's path, and its fixed type. */
  aliasOf: { path: string; type?: string } | null;
}

function optionDoc(o: Option): OptionDoc {
  const dflt = o.defaultValueDescription ?? (o.defaultValue === undefined || o.negate ? undefined : JSON.stringify(o.defaultValue));
  return {
    flags: o.flags,
    long: o.long,
    description: o.description,
    choices: o.argChoices ?? null,
    default: dflt ?? null,
    mandatory: o.mandatory,
  };
}

function argumentDoc(a: Argument): ArgumentDoc {
  const name = `${a.name()}${a.variadic ? '...' : ''}`;
  return { term: a.required ? `<${name}>` : `[${name}]`, description: a.description, choices: a.argChoices ?? null };
}

/** What a top-level command stands for when it is another's under a second name. */
function aliasOf(path: string): CommandDoc['aliasOf'] {
  if (path === OLD_CONFIG_NAME) return { path: 'strategy-config' };
  const type = STRATEGY_TYPES.find((t) => TYPES[t].alias === path);
  return type ? { path: 'strategy', type } : null;
}

function commandDoc(cmd: Command, help: ReturnType<Command['createHelp']>): CommandDoc {
  const path = commandPath(cmd);
  const description = cmd.description();
  return {
    path,
    usage: help.commandUsage(cmd),
    summary: cmd.summary() || description.split('\n')[0],
    description,
    arguments: help.visibleArguments(cmd).map(argumentDoc),
    // The help option is every command's, said once; the global options are the program's.
    options: help.visibleOptions(cmd).filter((o) => o.long !== '--help').map(optionDoc),
    examples: examplesFor(path) ?? [],
    commands: help.visibleCommands(cmd).filter((c) => c.name() !== 'help').map((c) => commandDoc(c, help)),
    aliasOf: path.includes(' ') ? null : aliasOf(path),
  };
}

/** The whole program, every command built, as data. */
export async function programDoc(): Promise<CommandDoc> {
  const program = await buildProgram(async () => {});
  return commandDoc(program, program.createHelp());
}

/** Every command below `doc`, depth first, in the program's order. */
export function allCommands(doc: CommandDoc): CommandDoc[] {
  return doc.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** The options of `alias`'s create that `strategy create` has too: those the alias's type takes. */
export function aliasCreateOptions(program: CommandDoc, alias: CommandDoc): { usage: string; typeOptions: OptionDoc[] } | null {
  const create = alias.commands.find((c) => c.path.endsWith(' create'));
  if (!create) return null;
  // The options every alias's create has are the strategy's own; the rest are its type's.
  const aliases = program.commands.filter((c) => c.aliasOf?.type);
  const everyAlias = (long: string | undefined) =>
    aliases.every((a) => a.commands.find((c) => c.path.endsWith(' create'))?.options.some((o) => o.long === long));
  return { usage: create.usage, typeOptions: create.options.filter((o) => !everyAlias(o.long)) };
}
