/**
 * The one exit point: parse argv, run the command, print its result on stdout, and map every
 * error to one `error: <message>` line on stderr and an exit code (SPEC §8).
 */
import path from 'node:path';
import { CommanderError, type Command } from './commander.js';
import { DcmError, EXIT } from '../domain/errors.js';
import { resolveDbPath } from '../store/path.js';
import { isPgUrl } from '../domain/db-url.js';
import { visible } from '../domain/outside-text.js';
import { readGlobals, type GlobalOptions } from './globals.js';
import { confirmIfRequired, type ConfirmIo } from './confirm.js';
import { wantColor, type OutputOptions } from './output/options.js';
import type { Printable } from './output/views.js';
import type { Outcome } from '../commands/results.js';
import type { RunCtx } from './runner.js';
import type { Runner } from './runner.js';
import { examplesText } from './examples.js';
import { buildProgram, finishCommands } from './program.js';
import { expandAbbreviations } from './abbrev.js';

function isOutcome(x: Printable | Outcome): x is Outcome {
  return !('kind' in x);
}

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream;
  stdin?: ConfirmIo['stdin'];
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
  let noFile: { path: string; created: boolean | null } | null = null;
  try {
    let outcome: Outcome = {};
    let out: OutputOptions | undefined;
    let ctx: RunCtx | undefined;
    const run: Runner = async (fn) => {
      const res = await fn(ctx!);
      outcome = isOutcome(res) ? res : { result: res };
    };
    // Only the commands the line can name are built (program.ts): `help` and typos get them all.
    const program = await buildProgram(run, io, true, argv);
    program.hook('preAction', async (_program, action) => {
      const g = readGlobals(action);
      const o = outputOptions(g, io);
      out = o;
      // What cannot be printed (an unknown -c, shell for a list) is refused before a write command
      // commits (file unchanged). Only -c and shell can make a result unprintable: other
      // commands neither load the renderers here nor prepare their output twice.
      const prepare = g.columns.length > 0 || g.format === 'shell' ? (await import('./output/render.js')).prepare : null;
      const dbPath = resolveDbPath(g.db);
      // The default path (no --db, no DCM_DB): a file missing there is said (issue 49).
      if (g.db === undefined && !process.env.DCM_DB) noFile = { path: dbPath, created: null };
      // A database on a server: its backend's modules are loaded for it alone (store/open.ts).
      if (isPgUrl(dbPath)) await (await import('../store/open.js')).loadPgBackend();
      ctx = {
        dbPath,
        quiet: g.quiet,
        checkResult: prepare ? (r) => void prepare(r as Printable, o) : undefined,
        confirm: (yes) => confirmIfRequired(yes, { stdin: io.stdin ?? process.stdin, stderr: io.stderr }),
        secretIo: { stdin: io.stdin ?? process.stdin, stderr: io.stderr },
        noFile: noFile ? (created) => (noFile!.created = created) : undefined,
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
    for (const w of outcome.warnings ?? []) io.stderr.write(`warning: ${w.split('\n').map((l) => visible(l, ERROR_MAX)).join('\n')}\n`);
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
        const [{ render }, { gathered }] = await Promise.all([import('./output/render.js'), import('./output/views.js')]);
        const text = render(await gathered(outcome.result), out);
        if (text) io.stdout.write(text);
      }
    }
    sayNoFile(noFile, io.stderr);
    return outcome.exitCode ?? EXIT.ok;
  } catch (err) {
    sayNoFile(noFile, io.stderr);
    return report(err, io.stderr);
  }
}

/** A command on the default path found no file there, or created one: said once, after its output. */
function sayNoFile(f: { path: string; created: boolean | null } | null, stderr: NodeJS.WritableStream): void {
  if (!f || f.created === null) return;
  const where = path.resolve(f.path);
  stderr.write(`warning: no dcm file at ${where}: ${f.created ? 'created; set DCM_DB or --db to use another' : 'nothing read, nothing created; set DCM_DB or --db'}\n`);
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

/**
 * Errors are one line (SPEC §8): a message quoting file text may hold newlines. It may quote a name
 * or a value typed by someone else too: what is left of control characters is escaped, and the
 * line cut (domain/outside-text.ts), so that an error never retitles or recolours the terminal.
 */
function oneLine(message: string): string {
  return visible(message.replace(/\s*[\r\n]+\s*/g, ' ').trim(), ERROR_MAX);
}

/** The longest error line (README "Text from outside dcm"); dcm's own messages are far shorter. */
const ERROR_MAX = 2000;

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
    for (const w of err.warnings) stderr.write(`warning: ${w.split('\n').map((l) => visible(l, ERROR_MAX)).join('\n')}\n`);
    stderr.write(`error: ${oneLine(err.message)}\n`);
    if (process.env.DCM_DEBUG === '1') stderr.write(`${err.stack}\n`);
    return err.exitCode;
  }
  const e = err as Error & { code?: string };
  const busy = e?.code === 'SQLITE_BUSY' ? ' (the database is busy)' : '';
  stderr.write(`error: ${visible((e?.message ?? String(err)).split('\n')[0], ERROR_MAX)}${busy}\n`);
  if (process.env.DCM_DEBUG === '1') stderr.write(`${e?.stack}\n`);
  return EXIT.failed;
}
