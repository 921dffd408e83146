/**
 * `dcm strategy-step logs CLOUD [--state S] [--attempt N] [--follow] [--strategy ID]`: the output
 * of the exec driver's runs for one subcloud (SPEC §7.2), read from the strategy's log folder
 * (`--log-dir` at create, or the database path + `.logs`) in the strategy's layout
 * (domain/logs.ts): `DIR/<strategy id>/<cloud>/<attempt>-<state>.log`, or for a strategy created
 * before that layout `DIR/<cloud>/…`, where only the files written since it was created are its.
 * Only the current strategy's runs, unless `--strategy` names an earlier (deleted) one: its
 * folder is kept, the record of what its runs printed.
 *
 * With `--follow`, new output is printed as it is written, and new runs as they start, until the
 * step has ended (complete, failed, aborted; or the strategy has ended, or is gone) and every log
 * is drained. The step's state is read from the file at each poll; so is each log's size.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OperationError, UsageError, EXIT } from '../domain/errors.js';
import {
  cloudLogDir,
  defaultLogDir,
  isStrategyFolderName,
  layoutOf,
  logRuns,
  logSlug,
  parseStrategyId,
  quoteList,
  runHeader,
  selectRuns,
  strategyIdOf,
  strategyLogDir,
  type LayoutVersion,
  type LogRun,
} from '../domain/logs.js';
import { STEP_ENDED, STRATEGY_ENDED, STRATEGY_TYPES, statesOf, type StrategyType } from '../domain/types.js';
import { parseTime } from '../store/clock.js';
import { openDb, type Db } from '../store/open.js';
import { findStep } from '../store/steps.js';
import { getStrategy, type Strategy } from '../store/strategy.js';
import { findSubcloud } from '../store/subclouds.js';
import { runHostsElsewhere } from '../store/runs.js';
import { hostName } from '../platform/who.js';
import { setLongTimeout } from '../platform/timers.js';
import { runtimeOf, type Ctx } from './context.js';

/** Where the logs go: stdout for the output, stderr for notes. */
export interface LogSink {
  /** Resolves once the chunk may be followed by more (backpressure); false once the reader is gone. */
  write(chunk: Buffer | string): Promise<boolean>;
  note(text: string): void;
}

export interface LogsOptions {
  state?: string;
  attempt?: number;
  follow?: boolean;
  /** An earlier strategy's id (or created_at): its runs rather than the current strategy's. */
  strategy?: string;
  /** How often `--follow` looks for new output and for the step's end. */
  pollMs?: number;
}

/** The states a strategy's runs can be in; an unknown type (a newer dcm's) has none known here. */
function strategyStates(s: Strategy): string[] {
  try {
    return statesOf(s.type as StrategyType, s.extra as { cert_file?: string | null }) ?? [];
  } catch {
    return [];
  }
}

/** Every state of every type (no strategy to say which type the logs were written for). */
function allStates(): string[] {
  return [...new Set(STRATEGY_TYPES.flatMap((t) => statesOf(t, { cert_file: 'x' })))];
}

function listNames(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

interface Target {
  dir: string;
  states: string[];
  version: LayoutVersion;
  /** Layout 1: only logs written since then (epoch ms) are the strategy's; else null. */
  since: number | null;
  /** An earlier strategy's logs: nothing more will be written to them. */
  earlier: boolean;
}

/** The folders a strategy's logs may be in: the current strategy's, and the default. */
function logFolders(ctx: Ctx, s: Strategy | undefined): string[] {
  const dirs = [s ? layoutOf(s, ctx.dbPath).dir : null, path.resolve(defaultLogDir(ctx.dbPath))];
  return [...new Set(dirs.filter((d): d is string => d !== null))];
}

/** Strategies with kept logs for this subcloud, newest first (their folders' names are their ids). */
function earlierWithLogs(dirs: readonly string[], cloud: string): string[] {
  const ids = dirs.flatMap((d) => listNames(d).filter((n) => isStrategyFolderName(n) && fs.existsSync(path.join(d, n, logSlug(cloud)))));
  return [...new Set(ids)].sort().reverse();
}

function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** `--strategy`: a usage error for what is not an id, before the file is read. */
export function checkStrategyOption(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const id = parseStrategyId(text);
  if (id === null) {
    throw new UsageError(`invalid strategy id '${text}': give the id its log folder is named by (20 digits), or its created_at`);
  }
  return id;
}

/** Check the cloud and `--state`, and find the subcloud's log folder; null: no strategy to read. */
async function target(db: Db | null, ctx: Ctx, cloud: string, opts: LogsOptions, id: string | undefined): Promise<Target | null> {
  const s = db ? await getStrategy(db) : undefined;
  let t: Target;
  if (id !== undefined && !(s && strategyIdOf(s.created_at) === id)) {
    // An earlier strategy: its folder, wherever it was kept. Its subcloud may be gone since.
    const dirs = logFolders(ctx, s);
    const found = dirs.map((d) => strategyLogDir(d, id)).find(isDir);
    if (!found) throw new OperationError(`no run logs of strategy ${id} (in ${dirs.join(' or ')})`);
    t = { dir: path.join(found, logSlug(cloud)), states: allStates(), version: 2, since: null, earlier: true };
  } else {
    if (!db || !await findSubcloud(db, cloud)) throw new OperationError(`Subcloud ${cloud} does not exist`);
    if (!s) {
      // No strategy: no logs are current, but a state is still checked against every type's.
      if (opts.state !== undefined && !allStates().includes(opts.state)) {
        throw new UsageError(`invalid state '${opts.state}' for any strategy type: choose from ${quoteList(allStates())}`);
      }
      return null;
    }
    const layout = layoutOf(s, ctx.dbPath);
    const since = layout.version === 1 ? parseTime(s.created_at) : null;
    t = { dir: cloudLogDir(layout, cloud), states: strategyStates(s), version: layout.version, since, earlier: false };
  }
  if (opts.state !== undefined && !t.states.includes(opts.state)) {
    // An earlier strategy, or one of a type this dcm has no states for: the states its logs hold count too.
    const known = !t.earlier && t.states.length > 0;
    const valid = known ? t.states : [...new Set([...t.states, ...logRuns(listNames(t.dir), t.states, t.version).map((r) => r.state)])];
    if (!valid.includes(opts.state)) {
      const which = known ? `for a ${s!.type} strategy` : 'for any strategy type';
      throw new UsageError(`invalid state '${opts.state}' ${which}: choose from ${quoteList(valid)}`);
    }
  }
  return t;
}

/** The strategy's runs in the folder, filtered, in run order. */
function runsOf(t: Target, opts: LogsOptions): LogRun[] {
  let runs = logRuns(listNames(t.dir), t.states, t.version);
  if (t.since !== null) {
    // Layout 1: a log last written before the strategy was created is an earlier strategy's.
    const since = t.since;
    runs = runs.filter((r) => {
      try {
        return fs.statSync(path.join(t.dir, r.file)).mtimeMs >= since;
      } catch {
        return false;
      }
    });
  }
  return selectRuns(runs, opts);
}

/** Copy a log from `offset` to its current end; the new offset, or null when the reader is gone. */
async function copyFrom(file: string, offset: number, sink: LogSink): Promise<number | null> {
  let fh: fs.promises.FileHandle;
  try {
    fh = await fs.promises.open(file, 'r');
  } catch {
    return offset; // not there (yet, or any more)
  }
  try {
    // A log rewritten by a later run of the same name starts over.
    if ((await fh.stat()).size < offset) offset = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(64 * 1024);
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      if (bytesRead === 0) return offset;
      offset += bytesRead;
      if (!await sink.write(buf.subarray(0, bytesRead))) return null;
    }
  } finally {
    await fh.close();
  }
}

/** Prints a header when the output switches to another run, as `tail` does between files. */
class Printer {
  private current: string | null = null;
  private printed = false;
  private endsWithNewline = true;

  constructor(
    private readonly sink: LogSink,
    private readonly headers: boolean,
  ) {}

  async header(r: LogRun): Promise<boolean> {
    if (!this.headers || this.current === r.file) return true;
    this.current = r.file;
    const gap = this.printed ? (this.endsWithNewline ? '\n' : '\n\n') : '';
    this.printed = true;
    this.endsWithNewline = true;
    return this.sink.write(`${gap}${runHeader(r)}\n`);
  }

  /** Wraps the sink so that the printer knows how the last output ended. */
  body(): LogSink {
    return {
      note: (t) => this.sink.note(t),
      write: (chunk) => {
        if (chunk.length) {
          this.printed = true;
          const last = typeof chunk === 'string' ? chunk.charCodeAt(chunk.length - 1) : chunk[chunk.length - 1];
          this.endsWithNewline = last === 0x0a;
        }
        return this.sink.write(chunk);
      },
    };
  }
}

function describeFilter(cloud: string, opts: LogsOptions): string {
  const parts = [`for ${cloud}`];
  if (opts.state !== undefined) parts.push(`in state '${opts.state}'`);
  if (opts.attempt !== undefined) parts.push(`attempt ${opts.attempt}`);
  return parts.join(' ');
}

/** Prints the logs; returns the exit code (130/143 when `--follow` is stopped by a signal). */
export async function stepLogs(ctx: Ctx, cloud: string, opts: LogsOptions, sink: LogSink): Promise<number> {
  const id = checkStrategyOption(opts.strategy);
  const db = await openDb(ctx.dbPath, { create: false });
  let t: Target | null;
  try {
    t = await target(db, ctx, cloud, opts, id);
  } catch (err) {
    db?.close();
    throw err;
  }
  if (t === null) {
    // No strategy: none is current, and an earlier one's logs are read by naming it.
    const ids = earlierWithLogs(logFolders(ctx, undefined), cloud);
    db?.close();
    const hint = ids.length ? `; earlier strategies' are read with --strategy ID (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''})` : '';
    sink.note(`no strategy, so no run logs for ${cloud}${hint}`);
    return EXIT.ok;
  }
  // An earlier strategy's logs are complete: there is nothing to follow.
  if (!opts.follow || t.earlier || !db) {
    db?.close();
    const runs = runsOf(t, opts);
    if (runs.length === 0) {
      sink.note(`no run logs ${describeFilter(cloud, opts)} (in ${t.dir})${await elsewhere(ctx, cloud, t)}`);
      return EXIT.ok;
    }
    const printer = new Printer(sink, runs.length > 1);
    for (const r of runs) {
      if (!await printer.header(r)) break;
      if (await copyFrom(path.join(t.dir, r.file), 0, printer.body()) === null) break;
    }
    return EXIT.ok;
  }
  try {
    return await follow(ctx, db, t, cloud, opts, sink);
  } finally {
    db.close();
  }
}

/**
 * Where the subcloud's runs ran when it was not here (several workers on a PostgreSQL store): each
 * host keeps the logs of the runs it started.
 */
async function elsewhere(ctx: Ctx, cloud: string, t: Target): Promise<string> {
  if (t.earlier) return '';
  const db = await openDb(ctx.dbPath, { create: false });
  if (!db) return '';
  try {
    const hosts = await runHostsElsewhere(db, cloud, hostName());
    return hosts.length ? `; its runs ran on ${hosts.map((h) => `${h.host} (${h.n})`).join(', ')}: their logs are there` : '';
  } finally {
    db.close();
  }
}

/** The step has nothing more to run: ended, or its strategy has ended or is gone. */
async function stepOver(db: Db, cloud: string): Promise<boolean> {
  const s = await getStrategy(db);
  if (!s || STRATEGY_ENDED.includes(s.state)) return true;
  const step = await findStep(db, cloud);
  return !step || STEP_ENDED.includes(step.state);
}

async function follow(ctx: Ctx, db: Db, t: Target, cloud: string, opts: LogsOptions, sink: LogSink): Promise<number> {
  const pollMs = opts.pollMs ?? 200;
  // One run named by --state and --attempt needs no headers; anything else may grow to several.
  const printer = new Printer(sink, !(opts.state !== undefined && opts.attempt !== undefined));
  const offsets = new Map<string, number>();
  let signal: NodeJS.Signals | null = null;
  let wake: (() => void) | null = null;
  const removeSignals = runtimeOf(ctx).signals.listen((s) => {
    signal = s;
    wake?.();
  });
  try {
    for (;;) {
      // The state first, then the logs: a run's output is complete before its step moves on.
      const over = await stepOver(db, cloud);
      const runs = runsOf(t, opts);
      for (const r of runs) {
        const file = path.join(t.dir, r.file);
        const known = offsets.get(r.file);
        let size: number;
        try {
          size = fs.statSync(file).size;
        } catch {
          continue;
        }
        if (known !== undefined && size === known) continue;
        if (!await printer.header(r)) return EXIT.ok;
        const next = await copyFrom(file, known ?? 0, printer.body());
        if (next === null) return EXIT.ok; // the reader is gone (`| head`)
        offsets.set(r.file, next);
      }
      if (signal) return signal === 'SIGTERM' ? EXIT.sigterm : EXIT.sigint;
      if (over) {
        if (offsets.size === 0) sink.note(`no run logs ${describeFilter(cloud, opts)} (in ${t.dir})${await elsewhere(ctx, cloud, t)}`);
        return EXIT.ok;
      }
      await new Promise<void>((resolve) => {
        const timer = setLongTimeout(resolve, pollMs);
        wake = () => {
          timer.clear();
          resolve();
        };
      });
      wake = null;
      if (signal) return signal === 'SIGTERM' ? EXIT.sigterm : EXIT.sigint;
    }
  } finally {
    removeSignals();
  }
}
