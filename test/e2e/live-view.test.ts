/**
 * The live view in a real terminal (SPEC §4 "Visibility"): `dcm strategy apply` runs inside tmux,
 * and the screen is read with capture-pane while it runs and after: done/total, the counts per
 * state, the stage's window, an ETA, a failure's reason; at the end, the summary and then the
 * final record (stdout), never mixed into the view.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { BIN, dcm, tempDir, waitFor } from '../helpers/cli.js';
import { createFleet, names } from '../helpers/history.js';

const SOCKET = `dcm-live-${process.pid}`;
const WIDTH = 90;

function tmux(...args: string[]): string {
  const r = spawnSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const screen = () => tmux('capture-pane', '-p', '-t', 'live');

let t: ReturnType<typeof tempDir>;
beforeAll(() => {
  const v = spawnSync('tmux', ['-V'], { encoding: 'utf8' });
  if (v.error || v.status !== 0) {
    throw new Error('tmux is missing: this test needs a real terminal. Install it (apt-get install -y tmux); .ci/run does.');
  }
  t = tempDir();
});
afterAll(() => {
  spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
  t?.cleanup();
});

describe('the live view in a terminal', () => {
  test('shows done/total, counts per state, the window, an ETA and a failure; ends with the summary, then the record', async () => {
    createFleet(t.db, names(240), [
      '--max-parallel-subclouds', '12', '--sim-latency', '30ms..90ms', '--sim-fail', 's5=pre check',
    ]);
    // A clean environment for the terminal: no NO_COLOR, a TERM that is not dumb.
    const cmd = `env -u NO_COLOR -u DCM_DB TERM=xterm-256color '${process.execPath}' '${BIN}' --db '${t.db}' strategy apply -c state; echo "EXIT=$?"; sleep 600`;
    tmux('new-session', '-d', '-s', 'live', '-x', String(WIDTH), '-y', '40', cmd);

    // While it runs: the view, redrawn in place.
    let seen = '';
    await waitFor(() => {
      seen = screen();
      const m = /\] (\d+)\/240 done/.exec(seen);
      return m !== null && Number(m[1]) >= 20 && Number(m[1]) < 200 && seen.includes('s5: pre check: injected failure');
    }, 60_000, 50);
    const lines = seen.split('\n');
    expect(lines.filter((l) => l.startsWith('dcm patch strategy applying: stage 1 of 1 (window 12)'))).toHaveLength(1);
    expect(seen).toMatch(/\[#+-+\] \d+\/240 done \d+%/);
    expect(seen).toMatch(/\d+ complete, 1 failed, 0 aborted, \d+ in progress, \d+ initial/);
    expect(seen).toMatch(/in progress: (pre check|updating patches|creating VIM patch strategy|applying VIM patch strategy|finishing patch strategy) \d+/);
    expect(seen).toMatch(/\d+ in flight, [\d.]+\/s, elapsed \S+, ETA \d+(\.\d)?(ms|s)\b/);
    expect(seen).toMatch(/latest failures:\n {2}s5: pre check: injected failure/);
    // Fitted to the width; no frame left behind in the scrollback above.
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(WIDTH);
    expect(tmux('capture-pane', '-p', '-S', '-', '-t', 'live').match(/dcm patch strategy applying/g)).toHaveLength(1);

    // The end: the last frame, the summary with its failure, then stdout's record.
    let end = '';
    await waitFor(() => (end = screen()).includes('EXIT='), 60_000, 100);
    expect(end).toMatch(/dcm patch strategy failed: stage 1 of 1 \(window 12\)\n\[#{10,}\] 240\/240 done 100%\n239 complete, 1 failed, 0 aborted, 0 in progress, 0 initial\n/);
    expect(end).toMatch(
      /latest failures:\n {2}s5: pre check: injected failure\nstrategy failed: 239 complete, 1 failed in \S+ \(peak 12 subclouds in flight, window 12\)\nfailed subclouds \(1\):\n {2}s5: pre check: injected failure\n\+-+\+-+\+\n\| Field +\| Value +\|\n\+-+\+-+\+\n\| state +\| failed +\|\n\+-+\+-+\+\nEXIT=1/,
    );
    expect(dcm(['--db', t.db, 'strategy', 'show', '-f', 'value', '-c', 'state']).stdout).toBe('failed\n');
  });

  test('strategy status --watch in a terminal shorter than its table: the last frame stays whole, both borders, then the exit', async () => {
    const db = `${t.db}.watch`;
    createFleet(db, names(30), [
      '--max-parallel-subclouds', '5', '--sim-latency', '20ms..60ms',
      '--sim-fail', 's3=pre check', '--sim-fail', 's7=pre check', '--sim-fail', 's20=pre check',
    ]);
    // 29 fields, the failures on 3 lines, 4 border and header lines: 35 lines on a screen of 20.
    tmux('new-session', '-d', '-s', 'watch', '-x', String(WIDTH), '-y', '20',
      `env -u NO_COLOR -u DCM_DB TERM=xterm-256color '${process.execPath}' '${BIN}' --db '${db}' strategy status --watch; echo "EXIT=$?"; sleep 600`);
    // The watch shows its first frame before the strategy starts: the apply runs from then on.
    await waitFor(() => tmux('capture-pane', '-p', '-t', 'watch').includes('| deferred sites '), 60_000, 50);
    const apply = dcm(['--db', db, '-q', 'strategy', 'apply']);
    expect(apply.code).toBe(1);
    let all = '';
    await waitFor(() => (all = tmux('capture-pane', '-p', '-S', '-', '-t', 'watch')).includes('EXIT='), 60_000, 100);
    const lines = all.slice(0, all.indexOf('EXIT=')).trimEnd().split('\n');
    const frame = lines.slice(-33);
    const border = /^\+-+\+-+\+$/;
    expect([frame[0], frame[2], frame[32]].every((l) => border.test(l))).toBe(true);
    expect(frame[1]).toMatch(/^\| Field +\| Value +\|$/);
    const names_ = frame.slice(3, 32).map((l) => /^\| ([^|]*?) *\|/.exec(l)?.[1]);
    expect(names_).toEqual([
      'strategy type', 'state', 'last action', 'driver', 'stage', 'window', 'start rate', 'steps', 'initial', 'in progress', 'complete', 'failed',
      'deferred', 'deferred sites', 'aborted', 'in flight', 'progress', 'failures', '', '', 'audit', 'max failures', 'stage gates', 'started_at', 'elapsed', 'eta', 'estimate from', 'orchestrator',
      'maintenance',
    ]);
    expect(frame[4]).toMatch(/^\| state +\| failed +\|$/);
    expect(all).toMatch(/\+\nEXIT=1\n/);
  });

  test.each([
    ['TERM=dumb', 'env -u NO_COLOR TERM=dumb'],
    ['NO_COLOR', 'env NO_COLOR=1 TERM=xterm-256color'],
  ])('on a terminal with %s: plain lines, no view', async (name, envCmd) => {
    const db = `${t.db}.${name.replace(/\W/g, '')}`;
    createFleet(db, names(6), ['--sim-latency', '0', '--sim-fail', 's2=pre check']);
    const session = `plain${name.replace(/\W/g, '')}`;
    tmux('new-session', '-d', '-s', session, '-x', String(WIDTH), '-y', '40',
      `${envCmd} '${process.execPath}' '${BIN}' --db '${db}' strategy apply -c state; echo "EXIT=$?"; sleep 600`);
    let end = '';
    await waitFor(() => (end = tmux('capture-pane', '-p', '-t', session)).includes('EXIT='), 60_000, 100);
    expect(end).not.toMatch(/\[[#-]+\]/);
    expect(end).toMatch(/ s1: complete\n/);
    expect(end).toMatch(/ s2: failed \(pre check: injected failure\)\n/);
    expect(end).toMatch(/strategy failed: 5 complete, 1 failed in [^\n]+\nfailed subclouds \(1\):\n {2}s2: pre check: injected failure\n/);
  });
});
