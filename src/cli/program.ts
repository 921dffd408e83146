/**
 * The commander program: every command, its options, the global options and the Examples blocks.
 * A command line builds only the top-level commands it can name (REGISTRARS), and their global
 * options and Examples only where it can lead (finishCommands): a list need not load, nor build,
 * create's forty options, the inventory's commands or the db commands.
 */
import { Command } from './commander.js';
import { createRequire } from 'node:module';
import { TYPES, STRATEGY_TYPES } from '../domain/types.js';
import { addGlobalOptions, addGlobalOptionsEverywhere } from './globals.js';
import { addExamples, addExamplesTo, OLD_CONFIG_NAME } from './examples.js';
import type { Io } from './main.js';
import type { Runner } from './runner.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

type Register = (program: Command, run: Runner) => void;

/**
 * The modules that register the top-level commands, in the program's order, each with the words
 * that name its commands (names and aliases). `all`: its commands walk the whole program (the
 * completion scripts), so a line that names one builds every command. test/cli/program.test.ts
 * holds the words to what each module registers.
 */
export const REGISTRARS: readonly { words: readonly string[]; all?: true; load: () => Promise<Register> }[] = [
  { words: ['subcloud'], load: async () => (await import('./subcloud.js')).registerSubcloud },
  { words: ['subcloud-group'], load: async () => (await import('./group.js')).registerGroup },
  { words: ['strategy', ...STRATEGY_TYPES.map((t) => TYPES[t].alias)], load: async () => (await import('./strategy.js')).registerStrategy },
  { words: ['strategy-step'], load: async () => (await import('./steps.js')).registerSteps },
  { words: ['strategy-config', OLD_CONFIG_NAME], load: async () => (await import('./strategy-config.js')).registerStrategyConfig },
  { words: ['db'], load: async () => (await import('./db.js')).registerDb },
  { words: ['completion'], all: true, load: async () => (await import('./completion.js')).registerCompletion },
  { words: ['alarm', 'bash-completion'], all: true, load: async () => (await import('./alarm.js')).registerAlarm },
];

/**
 * Which registrars a command line needs: those of every word in it that names a top-level command
 * (words are not told from option values here, so `--db strategy` takes `strategy` too: more than
 * the parse uses, never less). A line that names none (`--help`, a typo, `help` alone) or names
 * one that walks the program takes all of them, so commander's help and suggestions see every
 * command. Null: all.
 */
export function registrarsFor(argv: readonly string[]): Set<number> | null {
  const wanted = new Set<number>();
  for (const w of argv) {
    if (w === '--') break;
    const i = REGISTRARS.findIndex((r) => r.words.includes(w));
    if (i < 0) continue;
    if (REGISTRARS[i].all) return null;
    wanted.add(i);
  }
  return wanted.size ? wanted : null;
}

/**
 * The program: the commands `argv` can name (every command without it), their options, and
 * (unless `lazy`) the global options and Examples block on every command. `lazy` leaves those two
 * to `finishCommands`, which adds them only where the command line can lead: 137 commands with 16
 * global options each are 2,000 option objects and their listeners, a third of a short command's
 * start-up, and a command line uses a handful.
 */
export async function buildProgram(run: Runner, io?: Io, lazy = false, argv?: readonly string[]): Promise<Command> {
  const program = new Command('dcm')
    .description('Orchestrate software updates across a fleet of subclouds, dcmanager style')
    .version(version, '--version')
    .exitOverride()
    // Each command parses its own options first, so an option value that starts with a dash
    // (`--description "-first rack"`) is never read as a global option.
    .enablePositionalOptions()
    .configureOutput({
      outputError: () => {},
      // Help and version go to main's streams, never straight to the process's.
      writeOut: (s) => void (io ?? process).stdout.write(s),
      writeErr: (s) => void (io ?? process).stderr.write(s),
    })
    .showSuggestionAfterError(true);
  addGlobalOptions(program, true);
  const wanted = argv ? registrarsFor(argv) : null;
  const chosen = REGISTRARS.filter((_, i) => wanted === null || wanted.has(i));
  // One after the other, in the program's order (jest's VM modules also refuse imports that share
  // a dependency while it loads).
  for (const r of chosen) (await r.load())(program, run);
  // Last: every command registered above takes the global and formatter options, and gets its
  // Examples block.
  if (!lazy) {
    addGlobalOptionsEverywhere(program);
    addExamples(program);
  }
  return program;
}

/**
 * The global options and Examples of a lazy program, on every command `words` may name: each word
 * that is the name (or alias) of a subcommand of a command already reached reaches it too. Words
 * are not told apart from option values here (`-c strategy` reaches `strategy`), so this reaches
 * more commands than the parse will take, never fewer: whatever path commander and
 * expandAbbreviations follow, its commands have their options.
 */
export function finishCommands(program: Command, words: readonly string[]): void {
  const reached = new Set<Command>([program]);
  for (const w of words) {
    if (w === '--') break;
    for (const cmd of [...reached]) {
      const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w));
      if (sub && !reached.has(sub)) {
        reached.add(sub);
        addGlobalOptions(sub, false);
      }
    }
  }
  for (const cmd of reached) addExamplesTo(cmd);
}

