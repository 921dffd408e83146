/**
 * The one exit point: parse argv, run the command, print its result on stdout, and map every
 * error to one `error: <message>` line on stderr and an exit code (SPEC §8).
 */
import { Command, CommanderError } from './commander.js';
import { createRequire } from 'node:module';
import { DcmError, EXIT } from '../domain/errors.js';
import { resolveDbPath } from '../store/path.js';
import { addGlobalOptions, addGlobalOptionsEverywhere, readGlobals, type GlobalOptions } from './globals.js';
import { confirmIfRequired, type ConfirmIo } from './confirm.js';
import { wantColor, type OutputOptions } from './output/options.js';
import type { Printable } from './output/views.js';
import type { Outcome } from '../commands/results.js';
import type { RunCtx } from './runner.js';
import type { Runner } from './runner.js';
import { registerSubcloud } from './subcloud.js';
import { registerGroup } from './group.js';
import { registerStrategy } from './strategy.js';
import { registerSteps } from './steps.js';
import { registerStrategyConfig } from './strategy-config.js';
import { registerDb } from './db.js';
import { registerCompletion } from './completion.js';
import { registerAlarm } from './alarm.js';
import { addExamples, addExamplesTo, examplesText } from './examples.js';
import { expandAbbreviations } from './abbrev.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

function isOutcome(x: Printable | Outcome): x is Outcome {
  return !('kind' in x);
}

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream;
  stdin?: ConfirmIo['stdin'];
}

/**
 * The program: every command, its options, and (unless `lazy`) the global options and Examples
 * block on every command. `lazy` leaves those two to `finishCommands`, which adds them only where
 * the command line can lead: 137 commands with 16 global options each are 2,000 option objects and
 * their listeners, a third of a short command's start-up, and a command line uses a handful.
 */
export function buildProgram(run: Runner, io?: Io, lazy = false): Command {
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
  registerSubcloud(program, run);
  registerGroup(program, run);
  registerStrategy(program, run);
  registerSteps(program, run);
  registerStrategyConfig(program, run);
  registerDb(program, run);
  registerCompletion(program, run);
  registerAlarm(program, run);
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

function outputOptions(g: GlobalOptions, io: Io): OutputOptions {
  return {
    format: g.format,
    columns: g.columns,
    noindent: g.noindent,
    color: wantColor(io.stdout, g.noColor),
    prefix: g.prefix,
    maxWidth: g.maxWidth,
    fitWidth: g.fitWidth,
    terminalWidth: io.stdout.isTTY ? io.stdout.columns : undefined,
    printEmpty: g.printEmpty,
    sortColumns: g.sortColumns,
    sortDescending: g.sortDescending,
    quote: g.quote,
  };
}

export async function main(argv: string[], io: Io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  try {
    let outcome: Outcome = {};
    let out: OutputOptions | undefined;
    let ctx: RunCtx | undefined;
    const run: Runner = async (fn) => {
      const res = await fn(ctx!);
      outcome = isOutcome(res) ? res : { result: res };
    };
    const program = buildProgram(run, io, true);
    program.hook('preAction', async (_program, action) => {
      const g = readGlobals(action);
      const o = outputOptions(g, io);
      out = o;
      // What cannot be printed (an unknown -c, shell for a list) is refused before a write command
      // commits (exit 2, file unchanged). Only -c and shell can make a result unprintable: other
      // commands neither load the renderers here nor prepare their output twice.
      const prepare = g.columns.length > 0 || g.format === 'shell' ? (await import('./output/render.js')).prepare : null;
      ctx = {
        dbPath: resolveDbPath(g.db),
        quiet: g.quiet,
        checkResult: prepare ? (r) => void prepare(r as Printable, o) : undefined,
        confirm: (yes) => confirmIfRequired(yes, { stdin: io.stdin ?? process.stdin, stderr: io.stderr }),
        secretIo: { stdin: io.stdin ?? process.stdin, stderr: io.stderr },
      };
    });
    if (argv.length === 0) {
      io.stdout.write(`${program.helpInformation()}${examplesText('')}\n`);
      return EXIT.usage;
    }
    // cliff's `help subcloud list` is that command's --help (exit 0); commander's own help command
    // takes one word only, and exits 2 without one.
    const words = argv[0] === 'help' ? helpOf(program, argv.slice(1)) : argv;
    finishCommands(program, words);
    await program.parseAsync(expandAbbreviations(program, words), { from: 'user' });
    for (const w of outcome.warnings ?? []) io.stderr.write(`warning: ${w}\n`);
    if (!ctx?.quiet) for (const n of outcome.notes ?? []) io.stderr.write(`${n}\n`);
    if (outcome.text !== undefined) io.stdout.write(outcome.text);
    if (outcome.watch && out) {
      const [{ runWatch }, { render }] = await Promise.all([import('./watch.js'), import('./output/render.js')]);
      const o = out;
      return await runWatch(outcome.watch, io.stdout as NodeJS.WriteStream, async (r) => render(r, o));
    }
    if (outcome.result && out) {
      // A long list goes out row by row; anything else is rendered whole (render.ts loads the table
      // layout and chalk, which a streamed list does not need).
      const [{ streamChunks }, { writeChunks }] = await Promise.all([import('./output/stream.js'), import('./streams.js')]);
      const chunks = streamChunks(outcome.result, out);
      if (chunks) await writeChunks(io.stdout, chunks);
      else {
        const text = (await import('./output/render.js')).render(outcome.result, out);
        if (text) io.stdout.write(text);
      }
    }
    return outcome.exitCode ?? EXIT.ok;
  } catch (err) {
    return report(err, io.stderr);
  }
}

/**
 * `help A B`: `A B --help` when A B names a command; else `A B` alone, which commander refuses as
 * an unknown command (exit 2) rather than printing the program's help for a typo.
 */
function helpOf(program: Command, path: string[]): string[] {
  let cmd = program;
  for (const word of path) {
    const sub = cmd.commands.find((c) => c.name() === word);
    if (!sub) return path;
    cmd = sub;
  }
  return [...path, '--help'];
}

/** Errors are one line (SPEC §8): a message quoting file text may hold newlines. */
function oneLine(message: string): string {
  return message.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/** Commander's "\n(Did you mean X?)" as part of the one line: `; did you mean 'X'?`. */
function suggestion(message: string): string {
  return message.replace(/\s*\(Did you mean (one of )?(.+)\?\)\s*$/, (_m, oneOf: string | undefined, names: string) =>
    `; did you mean ${oneOf ?? ''}${names.split(', ').map((n) => `'${n}'`).join(', ')}?`,
  );
}

function report(err: unknown, stderr: NodeJS.WritableStream): number {
  if (err instanceof CommanderError) {
    // Help and --version end the parse with an "error" that is a success.
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.ok;
    // A command group without its subcommand (`dcm strategy`): help went to stderr, a usage error.
    if (err.code === 'commander.help') return EXIT.usage;
    stderr.write(`error: ${oneLine(suggestion(err.message.replace(/^error: /, '')))}\n`);
    return EXIT.usage;
  }
  if (err instanceof DcmError) {
    stderr.write(`error: ${oneLine(err.message)}\n`);
    if (process.env.DCM_DEBUG === '1') stderr.write(`${err.stack}\n`);
    return err.exitCode;
  }
  const e = err as Error & { code?: string };
  const busy = e?.code === 'SQLITE_BUSY' ? ' (the database is busy)' : '';
  stderr.write(`error: ${(e?.message ?? String(err)).split('\n')[0]}${busy}\n`);
  if (process.env.DCM_DEBUG === '1') stderr.write(`${e?.stack}\n`);
  return EXIT.failed;
}
