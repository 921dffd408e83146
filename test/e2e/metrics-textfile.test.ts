/**
 * `apply --metrics-textfile PATH`: the file read while the apply runs, by a Prometheus text-format
 * parser (parse-prometheus-text-format, a port of the Prometheus client's own parser): every
 * sample's name, type and labels valid as Prometheus has them, never half a file; at the end its
 * counts are the store's. The exec config's `metrics_textfile` is the same file by another way.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { METRICS } from '../../src/domain/metrics.js';
import { dcm, sleep } from '../helpers/cli.js';
import { createFleet, history, names, spawnDcm, steps, tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

interface Family {
  name: string;
  help: string;
  type: string;
  metrics: { value: string; labels?: Record<string, string> }[];
}
const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Family[];

const temp = tempPerTest();

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Map<string, string>(METRICS.map(([name, type]) => [name, type]));

/** Every family and sample as Prometheus would take them; the samples by name and labels. */
function check(text: string, strategy: string): Map<string, number> {
  expect(text.endsWith('\n')).toBe(true);
  const families = parse(text);
  expect(families.length).toBeGreaterThan(5);
  const out = new Map<string, number>();
  for (const f of families) {
    expect(f.name).toMatch(NAME);
    expect(f.name.startsWith('dcm_strategy_')).toBe(true);
    expect(f.type.toLowerCase()).toBe(TYPES.get(f.name));
    // Counters end in _total; units are base units.
    if (f.type === 'COUNTER') expect(f.name.endsWith('_total')).toBe(true);
    expect(f.help.length).toBeGreaterThan(0);
    for (const m of f.metrics) {
      expect(Number.isFinite(Number(m.value))).toBe(true);
      const labels = m.labels ?? {};
      for (const k of Object.keys(labels)) {
        expect(k).toMatch(LABEL);
        expect(k.startsWith('__')).toBe(false);
      }
      expect(labels.strategy).toBe(strategy);
      expect(labels.type).toBe('patch');
      const rest = Object.entries(labels).filter(([k]) => k !== 'strategy' && k !== 'type').map(([k, v]) => `${k}=${v}`).join(',');
      const key = rest ? `${f.name}{${rest}}` : f.name;
      expect(out.has(key)).toBe(false);
      out.set(key, Number(m.value));
    }
  }
  return out;
}

describe('apply --metrics-textfile', () => {
  test('parsed while the apply runs, every sample valid; its counts the store\'s at the end', async () => {
    const { dir, db } = temp();
    const file = path.join(dir, 'textfile', 'dcm.prom');
    fs.mkdirSync(path.dirname(file));
    createFleet(db, names(40), ['--max-parallel-subclouds', '4', '--sim-latency', '20ms..60ms', '--sim-fail', 's7=updating patches', '--start-rate', '1200/min']);
    const strategy = JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'list', '-f', 'json']).stdout)[0].id as string;
    const apply = spawnDcm(['--db', db, 'strategy', 'apply', '-q', '--metrics-textfile', file, '--metrics-interval', '100ms']);
    let ended = false;
    void apply.done.then(() => (ended = true));
    const seen = new Set<string>();
    while (!ended) {
      if (fs.existsSync(file)) {
        // Read as the collector does, whole at any moment: always a complete file.
        const text = fs.readFileSync(file, 'utf8');
        const m = check(text, strategy);
        if (m.get('dcm_strategy_state{state=applying}') === 1) seen.add(text);
      }
      await sleep(20);
    }
    const r = await apply.done;
    expect(r.code).toBe(1);
    // Several writes read while it ran, with the rollout moving between them.
    expect(seen.size).toBeGreaterThanOrEqual(3);
    const mid = check([...seen][1], strategy);
    expect(mid.get('dcm_strategy_window_subclouds')).toBe(4);
    expect(mid.get('dcm_strategy_start_rate_per_second')).toBe(20);

    const end = check(fs.readFileSync(file, 'utf8'), strategy);
    const st = steps(db);
    const runs = history(db);
    const count = <T>(xs: T[], f: (x: T) => boolean) => xs.filter(f).length;
    expect(end.get('dcm_strategy_state{state=failed}')).toBe(1);
    expect(end.get('dcm_strategy_state{state=applying}')).toBe(0);
    for (const state of ['initial', 'complete', 'failed', 'deferred', 'aborted']) {
      expect([state, end.get(`dcm_strategy_steps{state=${state}}`)]).toEqual([state, count(st, (s) => s.state === state)]);
    }
    expect(end.get('dcm_strategy_runs_started_total')).toBe(runs.length);
    for (const outcome of ['ok', 'failed', 'timeout', 'skipped', 'interrupted']) {
      expect([outcome, end.get(`dcm_strategy_runs_ended_total{outcome=${outcome}}`)]).toEqual([outcome, count(runs, (h) => h.outcome === outcome)]);
    }
    expect(end.get('dcm_strategy_runs_in_flight')).toBe(0);
    expect(end.get('dcm_strategy_gate_holds_total')).toBe(0);
    // Nothing of the writes is left beside it: the collector reads *.prom only, and finds one.
    expect(fs.readdirSync(path.dirname(file))).toEqual(['dcm.prom']);
  }, 120_000);

  test("the exec config's metrics_textfile; a path in no folder is a usage error, before anything runs", async () => {
    const { dir, db } = temp();
    fs.writeFileSync(path.join(dir, 'exec.yaml'), 'metrics_textfile: out.prom\nstates:\n  "*": "true"\n');
    dcmQuickOk(['--db', db, 'subcloud', 'add', 's1', 's2']);
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--driver', 'exec', '--exec-config', path.join(dir, 'exec.yaml')]);
    const bad = dcm(['--db', db, 'strategy', 'apply', '--metrics-textfile', path.join(dir, 'nosuch', 'x.prom')]);
    expect([bad.code, bad.stderr.trim()]).toEqual([2, `error: --metrics-textfile ${path.join(dir, 'nosuch', 'x.prom')}: no such directory ${path.join(dir, 'nosuch')}`]);
    expect(JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'show', '-f', 'json']).stdout).state).toBe('initial');
    expect(dcm(['--db', db, 'strategy', 'apply', '-q']).code).toBe(0);
    const m = check(fs.readFileSync(path.join(dir, 'out.prom'), 'utf8'), JSON.parse(dcmQuickOk(['--db', db, 'strategy', 'list', '-f', 'json']).stdout)[0].id);
    expect(m.get('dcm_strategy_steps{state=complete}')).toBe(2);
    expect(m.get('dcm_strategy_state{state=complete}')).toBe(1);
  });
});
