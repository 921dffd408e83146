/**
 * The global options (SPEC §4, §8): dcm's own and cliff's formatter options. They are declared on
 * the program and on every command, and the program parses positionally, so each command reads its
 * own options first (`--description "-first rack"` is a description) and a global option works
 * before or after the command (`dcm -f json strategy show` ≡ `dcm strategy show -f json`).
 */
import { InvalidArgumentError, Option, type Command } from './commander.js';
import { FORMATS, QUOTES, type Format, type Quote } from './output/options.js';
import { collect } from './parsers.js';

export interface GlobalOptions {
  /** As given: an empty `--db ""` stays an empty string, for the path layer to refuse. */
  db?: string;
  format: Format;
  columns: string[];
  noindent: boolean;
  noColor: boolean;
  quiet: boolean;
  prefix: string;
  maxWidth: number;
  fitWidth: boolean;
  printEmpty: boolean;
  sortColumns: string[];
  sortDescending: boolean;
  quote: Quote;
}


function integer(value: string): number {
  if (!/^\s*[-+]?\d+\s*$/.test(value)) throw new InvalidArgumentError(`invalid int value: '${value}'`);
  return Number(value);
}

/** Declare the global options on `cmd`; shown in the help of the program only. */
export function addGlobalOptions(cmd: Command, showInHelp: boolean): Command {
  const opts = [
    new Option('--db <path>', 'database file (default $DCM_DB, else ./dcm.db)'),
    new Option('-f, --format <format>', 'the output format, defaults to table').choices(FORMATS),
    new Option('-c, --column <name>', 'specify the column(s) to include, can be repeated').argParser(collect),
    new Option('--noindent', 'json: whether to disable indenting the JSON'),
    new Option('--prefix <prefix>', 'shell: add a prefix to all variable names'),
    new Option('--max-width <integer>', 'table: maximum display width, <1 to disable ($CLIFF_MAX_TERM_WIDTH)').argParser(integer),
    new Option('--fit-width', 'table: fit the table to the display width ($CLIFF_FIT_WIDTH=1)'),
    new Option('--print-empty', 'table: print empty table if there is no data to show'),
    new Option('--sort-column <column>', 'sort the rows by this column (repeatable; unknown names ignored)').argParser(collect),
    new Option('--sort-ascending', 'sort the column(s) in ascending order').conflicts('sortDescending'),
    new Option('--sort-descending', 'sort the column(s) in descending order').conflicts('sortAscending'),
    new Option('--quote <mode>', 'csv: when to include quotes, defaults to nonnumeric').choices(QUOTES),
    new Option('--no-color', 'never colour tables'),
    new Option('-q, --quiet', 'no progress on stderr'),
  ];
  for (const o of opts) cmd.addOption(showInHelp ? o : o.hideHelp());
  return cmd;
}

/** Every command below `cmd` gets the global options too. */
export function addGlobalOptionsEverywhere(cmd: Command): void {
  for (const sub of cmd.commands) {
    addGlobalOptions(sub, false);
    addGlobalOptionsEverywhere(sub);
  }
}

/**
 * The options of the command that runs merged with its parents' (commander's optsWithGlobals,
 * except that repeatable options add up): the nearest command's value wins.
 */
export function readGlobals(cmd: Command, env: NodeJS.ProcessEnv = process.env): GlobalOptions {
  const chain: Record<string, unknown>[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) chain.unshift(c.opts());
  const last = <T>(key: string): T | undefined => {
    let v: T | undefined;
    for (const o of chain) if (o[key] !== undefined) v = o[key] as T;
    return v;
  };
  const all = (key: string): string[] => chain.flatMap((o) => (o[key] as string[] | undefined) ?? []);
  const envWidth = Number.parseInt(env.CLIFF_MAX_TERM_WIDTH ?? '', 10);
  const envFit = Number.parseInt(env.CLIFF_FIT_WIDTH ?? '', 10);
  return {
    db: last<string>('db'),
    format: last<Format>('format') ?? 'table',
    columns: all('column'),
    noindent: Boolean(last('noindent')),
    // `--no-color` makes commander default `color` to true on every level: any false wins.
    noColor: chain.some((o) => o.color === false),
    quiet: Boolean(last('quiet')),
    prefix: last<string>('prefix') ?? '',
    maxWidth: last<number>('maxWidth') ?? (Number.isFinite(envWidth) ? envWidth : 0),
    fitWidth: Boolean(last('fitWidth')) || (Number.isFinite(envFit) && envFit !== 0),
    printEmpty: Boolean(last('printEmpty')),
    sortColumns: all('sortColumn'),
    sortDescending: Boolean(last('sortDescending')),
    quote: last<Quote>('quote') ?? 'nonnumeric',
  };
}
