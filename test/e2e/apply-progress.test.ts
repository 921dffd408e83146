/**
 * Apply's progress off a terminal (SPEC §4 "Visibility"): one line per subcloud that ends, a
 * summary line every --progress-interval, a closing summary naming the failures; -v for one line
 * per transition; -q for nothing.
 */
import { describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { BIN, dcm, waitFor } from '../helpers/cli.js';
import { createFleet, names, spawnDcm, tempPerTest } from '../helpers/history.js';
import { dcmQuick } from '../helpers/quick.js';

const temp = tempPerTest();

/** A span as the progress prints it (`850ms`, `3.2s`, `42s`, `3m05s`) in ms. */
function spanMs(text: string): number {
  const m = /^(?:(\d+)m)?(\d+(?:\.\d)?)(ms|s)$/.exec(text);
  if (!m) throw new Error(`not a span: ${text}`);
  return (Number(m[1] ?? 0) * 60 + Number(m[2]) / (m[3] === 'ms' ? 1000 : 1)) * 1000;
}

const ENDED_LINE = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} (s\d+): (complete|failed \(.+\))$/;

describe('apply progress off a terminal', () => {
  test('1,000 subclouds: one line per subcloud that ends plus periodic summaries, not one per transition', () => {
    const t = temp();
    createFleet(t.db, names(1000), [
      '--max-parallel-subclouds', '100', '--sim-latency', '0..6ms',
      '--sim-fail', 's17=pre check', '--sim-fail', 's900=applying VIM patch strategy',
    ]);
    const r = dcm(['--db', t.db, 'strategy', 'apply', '--progress-interval', '100ms', '-f', 'value', '-c', 'state']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('failed\n');
    const lines = r.stderr.split('\n').filter(Boolean);
    const ended = lines.map((l) => ENDED_LINE.exec(l)).filter((m) => m !== null);
    expect(ended).toHaveLength(1000);
    expect(new Set(ended.map((m) => m[1])).size).toBe(1000);
    expect(ended.filter((m) => m[2].startsWith('failed')).map((m) => `${m[1]} ${m[2]}`).sort()).toEqual([
      's17 failed (pre check: injected failure)',
      's900 failed (applying VIM patch strategy: injected failure)',
    ]);
    expect(r.stderr).not.toMatch(/ -> /);
    const periodic = lines.filter((l) => / progress: /.test(l));
    expect(periodic.length).toBeGreaterThanOrEqual(1);
    for (const p of periodic) {
      expect(p).toMatch(/progress: stage 1 of 1 \(window 100\): \d+\/1000 done \(\d+ complete, \d+ failed, 0 aborted, \d+ in progress, \d+ initial\), \d+ in flight, [\d.]+\/s, elapsed \S+, ETA (\S+|unknown)/);
    }
    // Everything else is the closing summary: its line, the failures' header and the two failures.
    const rest = lines.filter((l) => !ENDED_LINE.test(l) && !/ progress: /.test(l));
    expect(rest).toEqual([
      expect.stringMatching(/^strategy failed: 998 complete, 2 failed in \S+ \(peak 100 subclouds in flight, window 100\)$/),
      'failed subclouds (2):',
      '  s17: pre check: injected failure',
      '  s900: applying VIM patch strategy: injected failure',
    ]);
  });

  test('the closing summary names the first 20 failures, then how to list the rest', () => {
    const t = temp();
    createFleet(t.db, names(25), ['--max-parallel-subclouds', '25', '--sim-latency', '0', '--sim-fail-rate', '1']);
    const r = dcm(['--db', t.db, 'strategy', 'apply', '--progress-interval', '0s']);
    expect(r.code).toBe(1);
    const summary = r.stderr.slice(r.stderr.indexOf('strategy failed:'));
    const lines = summary.trimEnd().split('\n');
    expect(lines[1]).toBe('failed subclouds (25):');
    expect(lines.slice(2, 22).every((l) => /^ {2}s\d+: pre check: /.test(l))).toBe(true);
    expect(lines.slice(22)).toEqual(['  ... and 5 more: dcm strategy-step list --state failed']);
  });

  test('-v: one line per transition; -q: nothing on stderr', () => {
    const t = temp();
    createFleet(t.db, names(4), ['--sim-latency', '0']);
    const v = dcm(['--db', t.db, 'strategy', 'apply', '-v']);
    expect(v.code).toBe(0);
    expect((v.stderr.match(/ -> /g) ?? []).length).toBe(4 * 6); // initial -> 5 states -> complete
    expect(v.stderr).toMatch(/s1: finishing patch strategy -> complete\n/);

    const q = temp();
    createFleet(q.db, names(4), ['--sim-latency', '0']);
    const quiet = dcm(['--db', q.db, '-q', 'strategy', 'apply']);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
  });

  test('--progress-interval needs a duration with a unit (exit 2, nothing run)', () => {
    const t = temp();
    createFleet(t.db, names(2), ['--sim-latency', '0']);
    const r = dcm(['--db', t.db, 'strategy', 'apply', '--progress-interval', '10']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: .*give a duration with a unit: 10s, 1m \(got '10'\)\n$/);
    expect(dcmQuick(['--db', t.db, 'strategy', 'show', '-f', 'value', '-c', 'state']).stdout).toBe('initial\n');
  });

  test('a closed stderr drops the progress and nothing else: the strategy completes, exit 0', async () => {
    const t = temp();
    createFleet(t.db, names(300), ['--max-parallel-subclouds', '50', '--sim-latency', '0..5ms']);
    const child = spawn(process.execPath, [BIN, '--db', t.db, 'strategy', 'apply', '--progress-interval', '10ms', '-f', 'value', '-c', 'state'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Read the first progress, then close the pipe's reading end: later writes get EPIPE.
    child.stderr!.once('data', () => child.stderr!.destroy());
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect(code).toBe(0);
    expect(out).toBe('complete\n');
  });

  test('paused, the ETA is the time once resumed and stays put; after a resume, elapsed counts from the first start', async () => {
    const t = temp();
    createFleet(t.db, names(20), ['--max-parallel-subclouds', '2', '--sim-latency', '40ms..80ms']);
    const first = spawnDcm(['--db', t.db, 'strategy', 'apply', '--progress-interval', '50ms']);
    await waitFor(() => (first.stderr().match(/: complete\n/g) ?? []).length >= 2, 30_000, 10);
    expect(dcmQuick(['--db', t.db, 'strategy', 'pause']).code).toBe(0);
    // Paused and drained: the subclouds in flight ran to their end, nothing runs.
    const json = () => JSON.parse(dcmQuick(['--db', t.db, 'strategy', 'status', '-f', 'json']).stdout) as Record<string, unknown>;
    await waitFor(() => {
      const st = json();
      return st.state === 'paused' && st['in flight'] === 0 && st['in progress'] === 0;
    }, 30_000, 20);
    const drained = Date.now();
    // The summary lines written since (each starts with its time; the test's own reads of stderr lag
    // behind while it runs a command, so lines are told apart by their time, not by their count).
    const since = () =>
      first.stderr().split('\n').filter((l) => / progress: /.test(l) && Date.parse(`${l.slice(0, 23).replace(' ', 'T')}Z`) > drained);
    // Twelve of them (600 ms of the 50 ms interval: longer than the estimate's 500 ms cache).
    await waitFor(() => since().length >= 12, 30_000, 10);
    const etas = since().map((l) => / ETA (.+)$/.exec(l)?.[1]);
    expect(etas.filter((e) => !e?.endsWith(' once resumed'))).toEqual([]);
    expect(new Set(etas)).toEqual(new Set([etas[0]]));
    const status = json();
    expect(status.eta).toMatch(/ once resumed$/);
    expect(json().eta).toBe(status.eta);

    // Ctrl-C leaves it paused; some time later it is resumed and applied again by a new process.
    first.child.kill('SIGINT');
    expect((await first.done).code).toBe(130);
    const startedAt = Date.parse(`${String(status.started_at).replace(' ', 'T').slice(0, 23)}Z`);
    await waitFor(() => Date.now() - startedAt > 3000, 30_000, 50);
    expect(dcmQuick(['--db', t.db, 'strategy', 'resume']).code).toBe(0);
    const second = dcm(['--db', t.db, 'strategy', 'apply', '--progress-interval', '50ms']);
    expect(second.code).toBe(0);
    const lines = second.stderr.split('\n').filter((l) => / progress: /.test(l));
    expect(lines).not.toEqual([]);
    // Its first summary line already counts the 3 s since the strategy's first start.
    expect(spanMs(/ elapsed (\S+),/.exec(lines[0])![1])).toBeGreaterThanOrEqual(3000);
    expect(second.stderr).toMatch(/\nstrategy complete: 20 complete in \S+ of this apply, \S+ since the first start \(peak /);
  });
});
