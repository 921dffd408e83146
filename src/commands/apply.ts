/**
 * `dcm strategy apply`: the apply service (apply-service.ts) run on this process's runtime: its
 * clock, timers, /proc and signals, the real drivers, the progress on stderr, and the test hooks
 * the environment asks for. What is the command's alone: argv's options, the environment, and the
 * process-wide settings (V8's heap growth).
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import { UsageError } from '../domain/errors.js';
import { isPgUrl } from '../domain/db-url.js';
import type { StrategyType } from '../domain/types.js';
import { createRawDriver } from '../drivers/index.js';
import { makeProgress } from '../orchestrator/progress-choose.js';
import { applyTestHooks, windowClock } from '../orchestrator/test-env.js';
import { whoAmI } from '../platform/who.js';
import { pgRoundTrips } from '../platform/pg-client.js';
import { applyStrategy, type ApplyOptions } from './apply-service.js';
import { runtimeOf, type RunCtx } from './context.js';
import type { Outcome } from './results.js';
import type { Tracing } from './tracing.js';
import { strategyIdOf } from '../domain/logs.js';

export type { ApplyOptions };

/**
 * The traces (commands/tracing.ts), when `OTEL_EXPORTER_OTLP_ENDPOINT` (or its traces' own) is set
 * and the SDK is not disabled: only then is the OpenTelemetry SDK loaded.
 */
async function startTracingIfAsked(s: { created_at: string; type: string }, who: { host: string; pid: number }): Promise<Tracing | null> {
  const env = process.env;
  if (!(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) || env.OTEL_SDK_DISABLED === 'true') return null;
  return (await import('./tracing.js')).startTracing({ strategyId: strategyIdOf(s.created_at), type: s.type, host: who.host, pid: who.pid });
}

/** Strategies of more steps than this keep their heap close to its live data (heapGrowthFor). */
const LARGE_STRATEGY_STEPS = 25_000;

/**
 * How far V8 lets the old generation grow past what its last full GC kept, by the strategy's
 * size. The apply's live data is a window's worth (steps are read a window at a time); what grows
 * is garbage. A large strategy's heap is kept near its live data (20 %: 100,000 subclouds, window
 * 1,000, peak RSS 195 MiB with V8's own policy, 152 at 100 %, 136 at 20 %; BENCHMARKS figure
 * 7W's bound is 150). A smaller one's live data is a few MB, and a tight bound was a full GC every
 * few MB promoted: at 100 %, 10,000 subclouds peak at 127-130 MiB instead of 122, and a worker on
 * a server spends a sixth less CPU (figure 1's work: 2.4-2.5 s against 2.9; issue 51).
 */
function heapGrowthFor(steps: number): void {
  v8.setFlagsFromString(`--heap-growing-percent=${steps > LARGE_STRATEGY_STEPS ? 20 : 100}`);
}

/** `$DCM_DRAIN_MS`: how long a first Ctrl-C waits (default 60 s); anything but a number is ignored. */
function drainMs(text: string | undefined): number | undefined {
  const ms = Number(text);
  return text && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

export async function strategyApply(ctx: RunCtx, type?: StrategyType, opts: ApplyOptions = {}): Promise<Outcome> {
  // Test hooks are checked before the file is read: a stray variable is a usage error.
  const { hooks, counters } = await applyTestHooks(process.env, ctx.dbPath);
  if (!isPgUrl(ctx.dbPath) && (opts.maxLocal !== undefined || opts.leaseMs !== undefined)) {
    throw new UsageError(`${opts.maxLocal !== undefined ? '--max-local' : '--lease'} needs a PostgreSQL store: a file has one orchestrator`);
  }
  const rt = runtimeOf(ctx);
  return await applyStrategy(
    {
      dbPath: ctx.dbPath,
      runtime: rt,
      who: { ...whoAmI(), host: rt.host },
      quiet: ctx.quiet,
      checkResult: ctx.checkResult,
      progress: (choice) => makeProgress(process.stderr, choice, rt),
      notice: ctx.quiet ? undefined : (text) => process.stderr.write(`dcm: ${text}\n`),
      driver: createRawDriver,
      hooks,
      counters: (db) => {
        const c = counters(db);
        // With the round trips to a server the whole process made (every connection's: the store's,
        // the lease's, the simulated sites'), 0 on a file.
        return c && { counters: c.counters, done: (driver) => fs.writeFileSync(c.file, `${JSON.stringify({ ...c.counters, roundTrips: pgRoundTrips(), driver })}\n`) };
      },
      drainMs: drainMs(process.env.DCM_DRAIN_MS),
      windowClock: windowClock(process.env, rt.clock),
      tracing: startTracingIfAsked,
      sized: heapGrowthFor,
    },
    type,
    opts,
  );
}
