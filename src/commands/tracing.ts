/**
 * Traces of a rollout (OpenTelemetry), made when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: apply loads
 * this module with a dynamic import only then, so that without it nothing of the SDK is loaded.
 * The exporter is OTLP over HTTP (JSON), configured by the standard variables
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `…_HEADERS`, `…_TIMEOUT`).
 *
 * One trace per strategy: its trace id and the id of its root span are derived from the strategy's
 * id, so that every apply of the strategy (a resume, another worker) adds to the same trace.
 *   - `dcm strategy` (the root): exported once, by the apply that ends the strategy, from its
 *     first start to its end, with its final state.
 *   - `dcm apply` (a child of the root): one per apply process, with its host and pid; takeovers
 *     and adoptions are its span events.
 *   - one span per (site, state) attempt, a child of the apply that ran (or adopted) it, named
 *     after the state, with the run id, fence, attempt, outcome and reason.
 */
import crypto from 'node:crypto';
import { ROOT_CONTEXT, SpanStatusCode, trace, TraceFlags, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, RandomIdGenerator, TracerProvider, type IdGenerator } from '@opentelemetry/sdk-trace';
import type { RunEnd, RunObserver, RunStart } from '../orchestrator/observer.js';
import { REAL_TIMERS, type Timer } from '../platform/timers.js';

/** How long the last spans may take to leave at the apply's end (an endpoint that does not answer). */
const FLUSH_BOUND_MS = 5_000;

/** The strategy's trace id and root span id: the same in every apply of it. */
export function strategyTraceIds(strategyId: string): { traceId: string; spanId: string } {
  const h = crypto.createHash('sha256').update(`dcm strategy ${strategyId}`).digest('hex');
  return { traceId: h.slice(0, 32), spanId: h.slice(32, 48) };
}

/** Random ids, but the next ones asked for may be given (the root span's, derived from the strategy). */
class FixableIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  /** Each taken by the next id of its kind asked for (the SDK asks for the span's first). */
  nextTrace: string | null = null;
  nextSpan: string | null = null;
  generateTraceId(): string {
    const id = this.nextTrace ?? this.random.generateTraceId();
    this.nextTrace = null;
    return id;
  }
  generateSpanId(): string {
    const id = this.nextSpan ?? this.random.generateSpanId();
    this.nextSpan = null;
    return id;
  }
}

export interface TracingStart {
  strategyId: string;
  type: string;
  host: string;
  pid: number;
}

export class Tracing implements RunObserver {
  private readonly ids = new FixableIds();
  private readonly provider: TracerProvider;
  private readonly tracer: Tracer;
  private readonly root: SpanContext;
  private readonly apply: Span;
  private readonly runs = new Map<number, Span>();

  constructor(private readonly s: TracingStart) {
    this.provider = new TracerProvider({
      idGenerator: this.ids,
      resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME || 'dcm' }),
      spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
    });
    this.tracer = this.provider.getTracer('dcm');
    const { traceId, spanId } = strategyTraceIds(s.strategyId);
    this.root = { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
    this.apply = this.tracer.startSpan(
      'dcm apply',
      { attributes: { 'dcm.strategy': s.strategyId, 'dcm.type': s.type, 'host.name': s.host, 'process.pid': s.pid } },
      trace.setSpanContext(ROOT_CONTEXT, this.root),
    );
  }

  runStarted(r: RunStart): void {
    const span = this.tracer.startSpan(
      r.state,
      {
        startTime: r.atMs,
        attributes: {
          'dcm.strategy': this.s.strategyId,
          'dcm.cloud': r.cloud,
          'dcm.state': r.state,
          'dcm.attempt': r.attempt,
          'dcm.stage': r.stage,
          'dcm.run_id': r.runId,
          ...(r.fence !== undefined ? { 'dcm.fence': r.fence } : {}),
          'dcm.adopted': r.adopted,
          'dcm.history_id': r.historyId,
        },
      },
      trace.setSpan(ROOT_CONTEXT, this.apply),
    );
    // A second start of one history row (never expected): the first ends, unfinished.
    this.runs.get(r.historyId)?.end(r.atMs);
    this.runs.set(r.historyId, span);
  }

  runEnded(r: RunEnd): void {
    const span = this.runs.get(r.historyId);
    if (!span) return;
    this.runs.delete(r.historyId);
    span.setAttributes({ 'dcm.outcome': r.outcome, ...(r.reason ? { 'dcm.reason': r.reason } : {}) });
    if (r.outcome !== 'ok' && r.outcome !== 'skipped') span.setStatus({ code: SpanStatusCode.ERROR, message: r.reason || r.outcome });
    span.end(r.atMs);
  }

  event(name: string, attributes: Record<string, string | number | boolean>): void {
    this.apply.addEvent(name, attributes);
  }

  /**
   * The apply's end: runs still open end as left going (the next apply adopts or runs them
   * again), the apply's span ends, and once the strategy has ended (`ended`: its state and its
   * first start) the root span is exported. Then every span leaves, within a bound.
   */
  async close(o: { exitCode: number | null; ended: { state: string; firstStartMs: number } | null }): Promise<void> {
    const now = Date.now();
    for (const span of this.runs.values()) {
      span.setAttribute('dcm.outcome', 'left going');
      span.end(now);
    }
    this.runs.clear();
    if (o.exitCode !== null) this.apply.setAttribute('dcm.exit_code', o.exitCode);
    this.apply.end(now);
    if (o.ended) {
      this.ids.nextTrace = this.root.traceId;
      this.ids.nextSpan = this.root.spanId;
      const root = this.tracer.startSpan('dcm strategy', {
        root: true,
        startTime: Math.min(o.ended.firstStartMs, now),
        attributes: { 'dcm.strategy': this.s.strategyId, 'dcm.type': this.s.type, 'dcm.state': o.ended.state },
      });
      if (o.ended.state !== 'complete') root.setStatus({ code: SpanStatusCode.ERROR, message: o.ended.state });
      root.end(now);
    }
    let timer: Timer | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = REAL_TIMERS.after(resolve, FLUSH_BOUND_MS);
      timer.unref();
    });
    await Promise.race([this.provider.shutdown().catch(() => {}), bound]);
    timer?.clear();
  }
}

export function startTracing(s: TracingStart): Tracing {
  return new Tracing(s);
}
