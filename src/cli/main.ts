/**
 * The one exit point: parse argv, run the command, print its result on stdout, and map every
 * error to one `error: <message>` line on stderr and an exit code (SPEC §8).
 */
import { Command, CommanderError } from 'commander';
import { createRequire } from 'node:module';
import { DcmError, EXIT } from '../domain/errors.js';
import { resolveDbPath } from '../store/path.js';
import { extractGlobals, type GlobalOptions } from './globals.js';
import { wantColor } from './output/options.js';
import { selectColumns } from './output/columns.js';
import type { Result } from './output/result.js';
import type { Outcome, RunCtx, Runner } from './runner.js';
import { registerSubcloud } from './subcloud.js';
import { registerGroup } from './group.js';
import { registerStrategy } from './strategy.js';
import { registerSteps } from './steps.js';
import { registerCompletion } from './completion.js';
import { addExamples, examplesText } from './examples.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

function isOutcome(x: Result | Outcome): x is Outcome {
  return !('kind' in x);
}

export function buildProgram(run: Runner): Command {
  const program = new Command('dcm')
    .description('Orchestrate software updates across a fleet of subclouds, dcmanager style')
    .version(version, '--version')
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .showSuggestionAfterError(true)
    // Documented here for --help; they are taken out of argv before parsing (globals.ts).
    .option('--db <path>', 'database file (default $DCM_DB, else ./dcm.db)')
    .option('-f, --format <format>', 'table | json | csv | value | yaml', 'table')
    .option('-c, --column <name>', 'show only this column (repeatable)')
    .option('--noindent', 'compact json')
    .option('--no-color', 'never colour tables')
    .option('-q, --quiet', 'no progress on stderr');
  registerSubcloud(program, run);
  registerGroup(program, run);
  registerStrategy(program, run);
  registerSteps(program, run);
  registerCompletion(program, run);
  // Last: every command registered above gets its Examples block.
  addExamples(program);
  return program;
}

export async function main(argv: string[], io = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  try {
    const { globals, rest } = extractGlobals(argv);
    const ctx: RunCtx = {
      dbPath: resolveDbPath(globals.db),
      quiet: globals.quiet,
      // An unknown -c column is refused before a write command commits (exit 2, file unchanged).
      checkResult: globals.columns.length ? (r) => void selectColumns(r as Result, globals.columns) : undefined,
    };
    let outcome: Outcome = {};
    const run: Runner = async (fn) => {
      const out = await fn(ctx);
      outcome = isOutcome(out) ? out : { result: out };
    };
    const program = buildProgram(run);
    if (rest.length === 0) {
      io.stdout.write(`${program.helpInformation()}${examplesText('')}\n`);
      return EXIT.usage;
    }
    await program.parseAsync(rest, { from: 'user' });
    if (outcome.text !== undefined) io.stdout.write(outcome.text);
    if (outcome.watch) {
      const { runWatch } = await import('./watch.js');
      const color = wantColor(io.stdout, globals.noColor);
      return await runWatch(outcome.watch, io.stdout as NodeJS.WriteStream, (r) => renderOutcome(r, globals, color));
    }
    if (outcome.result) {
      io.stdout.write(await renderOutcome(outcome.result, globals, wantColor(io.stdout, globals.noColor)));
    }
    return outcome.exitCode ?? EXIT.ok;
  } catch (err) {
    return report(err, io.stderr);
  }
}

/**
 * Renderers load only when there is something to print, and the table renderer (with the colour
 * library) only for tables: start-up is most of what a person waits for.
 */
async function renderOutcome(result: Result, g: GlobalOptions, color: boolean): Promise<string> {
  if (g.format === 'table') {
    const { render } = await import('./output/render.js');
    return render(result, { format: g.format, columns: g.columns, noindent: g.noindent, color });
  }
  const { renderData } = await import('./output/formats.js');
  return renderData(selectColumns(result, g.columns), g.format, g.noindent);
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
