/**
 * Apply's progress off a terminal (SPEC §4 "Visibility"): one line per subcloud that ends, a
 * summary line every --progress-interval, a closing summary naming the failures; -v for one line
 * per transition; -q for nothing.
 */
import { describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { BIN, dcm } from '../helpers/cli.js';
import { createFleet, names, tempPerTest } from '../helpers/history.js';

const temp = tempPerTest();

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
    expect(dcm(['--db', t.db, 'strategy', 'show', '-f', 'value', '-c', 'state']).stdout).toBe('initial\n');
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
});
