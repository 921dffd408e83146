/**
 * `dcm strategy report --html FILE` (SPEC §4): a real apply, its report written by the built
 * binary, opened in headless Chromium. Screenshots go to test-output/ for a person to look at.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { dcm, tempDir } from '../helpers/cli.js';
import { expectErrorLine } from '../helpers/fleet.js';
import { openFile, outputPath, withChromium, type Opened } from '../helpers/browser.js';
import { steps as stepsOf } from '../helpers/history.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

const tmp = tempDir('dcm-report-');
afterAll(() => tmp.cleanup());

/** A fleet applied for real: a canary group of 4 (window 3) and 60 more (window 12), 2 injected failures. */
function appliedFleet(db: string): void {
  const run = (args: string[], input?: string) => dcmQuickOk(['--db', db, ...args], { input });
  run(['subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '3']);
  run(['subcloud-group', 'add', '--name', 'fleet', '--max_parallel_subclouds', '12']);
  run(['subcloud', 'add', 'canary1', 'canary2', 'canary3', 'canary4', '--group', 'canary']);
  run(['subcloud', 'add', ...Array.from({ length: 60 }, (_, i) => `site${String(i + 1).padStart(3, '0')}`), '--group', 'fleet']);
  run([
    'strategy', 'create', '--type', 'patch', '--sim-latency', '5ms..60ms', '--sim-seed', '11',
    '--sim-fail', 'site007=applying VIM patch strategy', '--sim-fail', 'site033=pre check',
  ]);
  expect(dcm(['--db', db, '-q', 'strategy', 'apply']).code).toBe(1);
}

/** What the page shows, read from its DOM. */
async function pageFacts(o: Opened) {
  return o.page.evaluate(() => {
    const stages = [...document.querySelectorAll<HTMLElement>('.stage')].map((s) => {
      const lanes = [...s.querySelectorAll<SVGGElement>('g.lane')];
      return {
        stage: Number(s.dataset.stage),
        steps: Number(s.dataset.steps),
        lanes: lanes.length,
        covered: lanes.reduce((n, l) => n + Number(l.dataset.count), 0),
        labels: lanes.map((l) => l.dataset.label!),
      };
    });
    const failures = [...document.querySelectorAll('#failures tr.failure')].map((tr) =>
      [...tr.querySelectorAll('td')].map((td) => td.textContent!.trim()),
    );
    const durations = [...document.querySelectorAll('#durations tr.duration td:first-child')].map((td) => td.textContent!.trim());
    const cards = Object.fromEntries(
      [...document.querySelectorAll<HTMLElement>('.card')].map((c) => [c.dataset.key, c.querySelector('.n')!.textContent]),
    );
    return { title: document.title, stages, failures, durations, cards, width: document.documentElement.scrollWidth };
  });
}

describe('a report of a real apply', () => {
  const db = path.join(tmp.dir, 'fleet.db');
  const html = path.join(tmp.dir, 'report.html');
  beforeAll(() => {
    appliedFleet(db);
    dcmQuickOk(['--db', db, 'strategy', 'report', '--html', html]);
  });

  test('written by the built binary: the file, and a record of what it holds', () => {
    const r = dcmQuick(['--db', db, '-f', 'json', 'strategy', 'report', '--html', html]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      report: html,
      'strategy type': 'patch',
      state: 'failed',
      steps: 64,
      complete: 62,
      failed: 2,
      deferred: 0,
      aborted: 0,
      stages: 2,
    });
    const text = fs.readFileSync(html, 'utf8');
    expect(text.startsWith('<!doctype html>')).toBe(true);
    // Self-contained: nothing to fetch.
    expect(text).not.toMatch(/<script|<link|<img|@import|url\(|(src|href)=/i);
    // No temporary file left beside it.
    expect(fs.readdirSync(tmp.dir).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  test('in Chromium: no errors, nothing fetched, a lane per step, the failures listed, durations per state', async () => {
    const steps = stepsOf(db);
    const failed = steps.filter((s) => s.state === 'failed');
    await withChromium(async (browser) => {
      const o = await openFile(browser, html);
      expect(o.errors).toEqual([]);
      expect(o.outside).toEqual([]);
      const f = await pageFacts(o);
      expect(f.title).toBe('dcm report: patch strategy, failed');
      expect(f.cards).toMatchObject({ steps: '64', complete: '62', failed: '2' });
      // One lane per step, in step order, in the stage of its step.
      for (const st of f.stages) {
        const mine = steps.filter((s) => s.stage === st.stage).map((s) => s.cloud);
        expect({ stage: st.stage, lanes: st.lanes, covered: st.covered, labels: st.labels }).toEqual({
          stage: st.stage,
          lanes: mine.length,
          covered: mine.length,
          labels: mine,
        });
      }
      expect(f.stages.map((s) => s.steps)).toEqual([4, 60]);
      // Every failure, with the state it failed in and its details.
      expect(f.failures.map((row) => [row[0], row[2], row[3]]).sort()).toEqual(
        failed.map((s) => [s.cloud, s.details.split(': ')[0], s.details]).sort(),
      );
      expect(f.failures.map((r) => r[0]).sort()).toEqual(['site007', 'site033']);
      expect(f.durations).toEqual([
        'pre check',
        'updating patches',
        'creating VIM patch strategy',
        'applying VIM patch strategy',
        'finishing patch strategy',
      ]);
      // Fits the window: no horizontal scrolling.
      expect(f.width).toBeLessThanOrEqual(1280);
      await o.page.screenshot({ path: outputPath('report.png'), fullPage: true });
      // A narrow window still shows it all.
      await o.page.setViewport({ width: 700, height: 900 });
      expect(await o.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(700);
      await o.page.screenshot({ path: outputPath('report-narrow.png'), fullPage: true });
    });
  });

  test('--html - writes the page to stdout', () => {
    const r = dcmQuick(['--db', db, 'strategy', 'report', '--html', '-']);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith('<!doctype html>')).toBe(true);
    expect(r.stdout.trimEnd().endsWith('</html>')).toBe(true);
  });

  test('refusals: no strategy, no such directory, no --html, another type', () => {
    const empty = path.join(tmp.dir, 'empty.db');
    expectErrorLine(dcmQuick(['--db', empty, 'strategy', 'report', '--html', path.join(tmp.dir, 'x.html')]), 1, 'Strategy not found');
    expect(fs.existsSync(empty)).toBe(false);
    expect(fs.existsSync(path.join(tmp.dir, 'x.html'))).toBe(false);
    const nowhere = path.join(tmp.dir, 'no', 'such', 'r.html');
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'report', '--html', nowhere]), 1, `cannot write ${nowhere}: no such directory`);
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'report']), 2, "required option '--html <file>' not specified");
    expectErrorLine(dcmQuick(['--db', db, 'strategy', 'report', '--type', 'firmware', '--html', html]), 1, "Strategy of type 'firmware' not found");
    expect(dcmQuick(['--db', db, 'patch-strategy', 'report', '--html', html]).code).toBe(0);
  });
});

test('stopped on failure: the stage that never started still has a lane per subcloud', async () => {
  const db = path.join(tmp.dir, 'stopped.db');
  const html = path.join(tmp.dir, 'stopped.html');
  const run = (args: string[]) => dcmQuickOk(['--db', db, ...args]);
  run(['subcloud-group', 'add', '--name', 'canary']);
  run(['subcloud-group', 'add', '--name', 'rest']);
  run(['subcloud', 'add', 'k1', 'k2', '--group', 'canary']);
  run(['subcloud', 'add', 'r1', 'r2', 'r3', '--group', 'rest']);
  run(['strategy', 'create', '--type', 'firmware', '--stop-on-failure', '--sim-latency', '0', '--sim-fail', 'k1=importing firmware']);
  expect(dcm(['--db', db, '-q', 'strategy', 'apply']).code).toBe(1);
  run(['strategy', 'report', '--html', html]);
  await withChromium(async (browser) => {
    const o = await openFile(browser, html);
    expect(o.errors).toEqual([]);
    const f = await pageFacts(o);
    expect(f.stages.map((s) => [s.stage, s.covered, s.labels])).toEqual([
      [1, 2, ['k1', 'k2']],
      [2, 3, ['r1', 'r2', 'r3']],
    ]);
    expect(f.cards).toMatchObject({ failed: '1', initial: '3' });
    expect(f.failures.map((r) => r[0])).toEqual(['k1']);
  });
});

describe('10,000 steps', () => {
  const db = path.join(tmp.dir, 'big.db');
  const html = path.join(tmp.dir, 'big.html');

  beforeAll(() => {
    const run = (args: string[], input?: string) => dcmQuickOk(['--db', db, ...args], { input });
    run(['subcloud-group', 'add', '--name', 'canary', '--max_parallel_subclouds', '10']);
    run(['subcloud-group', 'add', '--name', 'fleet', '--max_parallel_subclouds', '500']);
    const rows = ['name,group'];
    for (let i = 1; i <= 20; i++) rows.push(`c${i},canary`);
    for (let i = 1; i <= 9980; i++) rows.push(`s${String(i).padStart(4, '0')},fleet`);
    run(['subcloud', 'import', '-'], rows.join('\n'));
    run(['strategy', 'create', '--type', 'patch', '--sim-latency', '0..5ms', '--sim-fail-rate', '0.002', '--sim-seed', '7']);
    expect(dcm(['--db', db, '-q', 'strategy', 'apply']).code).toBe(1);
  });

  test('lanes of several subclouds cover every step; the load time is written down', async () => {
    const t0 = performance.now();
    const r = dcmQuick(['--db', db, 'strategy', 'report', '--html', html]);
    const writeMs = performance.now() - t0;
    expect(r.code).toBe(0);
    const failed = stepsOf(db).filter((s) => s.state === 'failed').length;
    expect(failed).toBeGreaterThan(0);
    await withChromium(async (browser) => {
      const o = await openFile(browser, html);
      expect(o.errors).toEqual([]);
      expect(o.outside).toEqual([]);
      const f = await pageFacts(o);
      expect(f.stages.map((s) => [s.steps, s.covered])).toEqual([
        [20, 20],
        [9980, 9980],
      ]);
      // The canary stage is drawn one lane per subcloud, the big one in at most 500 lanes.
      expect(f.stages[0].lanes).toBe(20);
      expect(f.stages[1].lanes).toBeLessThanOrEqual(500);
      expect(f.stages[1].lanes).toBeGreaterThan(100);
      expect(f.failures).toHaveLength(failed);
      await o.page.screenshot({ path: outputPath('report-10000.png'), fullPage: true });
      const size = fs.statSync(html).size;
      // Measured, not asserted (the machine's load varies): kept beside the screenshots.
      fs.writeFileSync(
        outputPath('report-10000.txt'),
        `10,000 steps: dcm strategy report ${writeMs.toFixed(0)} ms, ${(size / 1024).toFixed(0)} KiB, Chromium load ${o.loadMs.toFixed(0)} ms\n`,
      );
    });
  });
});
