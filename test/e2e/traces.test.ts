/**
 * Traces (OTEL_EXPORTER_OTLP_ENDPOINT): received by a local OTLP/HTTP endpoint (a small HTTP
 * server of this test, taking what the exporter sends), one span per (site, state) attempt as the
 * history has them, under the apply that ran it, under the strategy's root: one trace for the
 * strategy across two applies (a failure, a retry). Without the variable nothing of the SDK loads.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { strategyTraceIds } from '../../src/commands/tracing.js';
import { BIN, ROOT } from '../helpers/cli.js';
import { createFleet, history, names, tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
  events?: { name: string }[];
}

/** An OTLP/HTTP endpoint on 127.0.0.1: every span of every request (JSON, as the exporter sends it). */
async function collector(): Promise<{ url: string; spans: OtlpSpan[]; types: Set<string>; close: () => Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const types = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      types.add(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, spans, types, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The built CLI, asynchronously (the collector answers in this process meanwhile). */
function dcmAsync(args: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

const attr = (s: OtlpSpan, key: string): unknown => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : (v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue)));
};

let stop: (() => Promise<void>) | null = null;
afterEach(async () => {
  await stop?.();
  stop = null;
});

describe('OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  test('one span per attempt, under its apply, under the strategy: one trace across a failure and a retry', async () => {
    const { db } = temp();
    const c = await collector();
    stop = c.close;
    createFleet(db, names(5), ['--max-parallel-subclouds', '2', '--sim-latency', '5ms', '--sim-fail', 's2=updating patches']);
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: c.url, OTEL_BSP_SCHEDULE_DELAY: '50' };
    expect((await dcmAsync(['--db', db, 'strategy', 'apply', '-q'], env)).code).toBe(1);
    // The failed site's sim fault cleared, and its step put back to the state it failed in: attempt 2.
    dcmQuickOk(['--db', db, 'strategy', 'retry', 's2']);
    const strategyId = JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'list', '-f', 'json']).stdout)[0].id as string;
    expect((await dcmAsync(['--db', db, 'strategy', 'apply', '-q'], env)).code).toBe(1);

    const { traceId, spanId: rootId } = strategyTraceIds(strategyId);
    expect([...c.types].every((t) => t.startsWith('POST /v1/traces application/json'))).toBe(true);
    // One trace: every span of both applies.
    expect(new Set(c.spans.map((s) => s.traceId))).toEqual(new Set([traceId]));
    const roots = c.spans.filter((s) => s.name === 'dcm strategy');
    // Exported by each apply that ended the strategy, always as the same span.
    expect(roots.length).toBeGreaterThanOrEqual(1);
    for (const r of roots) {
      expect(r.spanId).toBe(rootId);
      expect(r.parentSpanId ?? '').toBe('');
    }
    const applies = c.spans.filter((s) => s.name === 'dcm apply');
    expect(applies).toHaveLength(2);
    for (const a of applies) expect(a.parentSpanId).toBe(rootId);
    const applyIds = new Set(applies.map((a) => a.spanId));

    // Every run of the history is one span, under an apply, with its attempt, outcome, run id, fence.
    const runs = history(db);
    const attempts = c.spans.filter((s) => s.name !== 'dcm strategy' && s.name !== 'dcm apply');
    expect(attempts).toHaveLength(runs.length);
    const byRun = new Map(attempts.map((s) => [`${attr(s, 'dcm.cloud')}|${attr(s, 'dcm.state')}|${attr(s, 'dcm.attempt')}`, s]));
    expect(byRun.size).toBe(runs.length);
    for (const r of runs) {
      const s = byRun.get(`${r.cloud}|${r.state}|${r.attempt}`)!;
      expect(s).toBeDefined();
      expect(s.name).toBe(r.state);
      expect(applyIds.has(s.parentSpanId!)).toBe(true);
      expect(attr(s, 'dcm.outcome')).toBe(r.outcome);
      expect(attr(s, 'dcm.run_id')).toBe(`${strategyId}/${encodeURIComponent(r.cloud)}/${encodeURIComponent(r.state)}/${r.attempt}`);
      expect(typeof attr(s, 'dcm.fence')).toBe('string');
      if (r.outcome === 'failed') expect(attr(s, 'dcm.reason')).toBe(r.details);
    }
    // The retried attempt is the second apply's, the first attempt the first's.
    const first = byRun.get('s2|updating patches|1')!;
    const second = byRun.get('s2|updating patches|2')!;
    expect(first.parentSpanId).not.toBe(second.parentSpanId);
  }, 60_000);

  test('without it, apply loads nothing of OpenTelemetry; with it, the SDK', () => {
    const { dir, db } = temp();
    const other = path.join(dir, 'other.db');
    const counted = (file: string, env: Record<string, string | undefined>) => {
      createFleet(file, names(2), ['--sim-latency', '0']);
      const out = `${file}.modules.txt`;
      const r = spawnSync(process.execPath, ['--import', path.join(ROOT, 'bench', 'diag', 'count-modules.js'), BIN, '--db', file, 'strategy', 'apply', '-q'], {
        encoding: 'utf8',
        env: { ...process.env, ...env, BENCH_MODULES_OUT: out },
      });
      expect(r.status).toBe(0);
      return fs.readFileSync(out, 'utf8').split('\n').filter((l) => l.includes('@opentelemetry') || l.includes('dist/commands/tracing.js')).length;
    };
    expect(counted(db, { OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined })).toBe(0);
    // An endpoint nobody answers at: the apply still ends (the last spans' wait is bounded).
    expect(counted(other, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toBeGreaterThan(5);
  }, 60_000);
});
