/**
 * `apply --metrics-textfile PATH` (or the exec config's `metrics_textfile`): a Prometheus text file
 * kept up to date while the apply runs, as node_exporter's textfile collector reads one. It is
 * written whole or not at all (a temporary file beside it, then a rename: the collector never
 * reads half a file, and ignores the temporary one, whose name does not end in `.prom`).
 *
 * Written at the apply's start, every interval (default 5 s) and at its end: never per transition,
 * so that its cost does not follow the fleet (each write is a few grouped counts of the store,
 * store/metrics.ts). A write that fails (a full disk) is said once and tried again at the next
 * interval; the apply goes on.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from '../domain/errors.js';
import { renderMetrics } from '../domain/metrics.js';
import { rateInForce, readStoredRate } from '../domain/start-rate.js';
import { strategyIdOf } from '../domain/logs.js';
import { durationOption } from '../domain/durations.js';
import { REAL_TIMERS, type Timer, type Timers } from '../platform/timers.js';
import type { Db } from '../store/open.js';
import { readMetrics } from '../store/metrics.js';

/** How often the file is written by default. */
export const METRICS_INTERVAL_MS = 5_000;

/** `--metrics-interval` as given: a duration of 100 ms or more. */
export function metricsInterval(text: string | undefined): number {
  if (text === undefined) return METRICS_INTERVAL_MS;
  const ms = durationOption('--metrics-interval', text);
  if (ms < 100) throw new UsageError(`Invalid --metrics-interval value: ${text}. It must be 100ms or more`);
  return ms;
}

/** The file's path, checked before anything runs: its folder must exist, and it must not be a folder. */
export function checkMetricsPath(file: string, option = '--metrics-textfile'): string {
  if (file.trim() === '') throw new UsageError(`option '${option}' is empty: give a file`);
  const abs = path.resolve(file);
  const dir = path.dirname(abs);
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch {
    throw new UsageError(`${option} ${file}: no such directory ${dir}`);
  }
  if (!st.isDirectory()) throw new UsageError(`${option} ${file}: ${dir} is not a directory`);
  try {
    if (fs.statSync(abs).isDirectory()) throw new UsageError(`${option} ${file}: it is a directory`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
  }
  return abs;
}

/** The exec config's `metrics_textfile`, as stored with the strategy (absolute: resolved at create). */
export function configMetricsPath(extra: Record<string, unknown>): string | undefined {
  if (typeof extra.exec_config !== 'string') return undefined;
  try {
    const file = (JSON.parse(extra.exec_config) as { metrics_textfile?: unknown }).metrics_textfile;
    return typeof file === 'string' ? file : undefined;
  } catch {
    return undefined;
  }
}

export class MetricsFile {
  private timer: Timer | null = null;
  private failedSaid = false;
  private writing: Promise<void> = Promise.resolve();
  /** Writes made (for the tests' counters: never one per transition). */
  writes = 0;

  constructor(
    private readonly db: Db,
    private readonly file: string,
    private readonly intervalMs: number,
    private readonly warn: (text: string) => void,
    private readonly timers: Timers = REAL_TIMERS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The first write now, then one every interval. */
  async start(): Promise<this> {
    await this.write();
    this.timer = this.timers.every(() => this.write(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  /** The last write (the strategy as the apply leaves it), and no more. */
  async close(): Promise<void> {
    this.timer?.clear();
    this.timer = null;
    await this.write();
  }

  /** One write, after any under way (never two at once). */
  write(): Promise<void> {
    this.writing = this.writing.then(() => this.writeOnce());
    return this.writing;
  }

  private async writeOnce(): Promise<void> {
    if (!this.db.open) return;
    let text: string;
    try {
      const m = await readMetrics(this.db);
      if (!m) return;
      const current = m.openStages[0] ?? m.lastStage;
      const stage = m.stages.find((s) => s.stage === current) ?? null;
      const rate = readStoredRate(stage?.startRate);
      const extra = JSON.parse(m.extraArgs) as { plan_digest?: unknown };
      text = renderMetrics({
        strategy: strategyIdOf(m.createdAt),
        type: m.type,
        state: m.state,
        steps: m.steps,
        runsStarted: m.runsStarted,
        runsEnded: m.runsEnded,
        runsInFlight: m.runsInFlight,
        stage: current,
        window: stage?.window ?? null,
        startRatePerMin: rate ? rateInForce(rate, m.steps.complete ?? 0) : null,
        gateHolds: m.gateHolds,
        planDigest: typeof extra.plan_digest === 'string' ? extra.plan_digest : null,
        atMs: this.now(),
      });
    } catch {
      // A busy store or one closing: the next interval reads it again.
      return;
    }
    const tmp = path.join(path.dirname(this.file), `.${path.basename(this.file)}.${process.pid}.tmp`);
    try {
      fs.writeFileSync(tmp, text, { mode: 0o644 });
      fs.renameSync(tmp, this.file);
      this.writes++;
      this.failedSaid = false;
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      if (!this.failedSaid) this.warn(`cannot write the metrics file ${this.file}: ${(err as Error).message}; the apply goes on, and tries again`);
      this.failedSaid = true;
    }
  }
}
