/**
 * The report as a post-mortem (issue 19): a real apply over the exec driver, run by the built
 * binary from several shells — a site that fails until it is fixed and `strategy retry` recovers
 * it, one the config's retries recover, a pause, a resume, a `strategy update` of the window, a
 * kill -9 of apply and a re-apply — then the report, opened in Chromium. The page must say what was
 * rolled out, every failed run (recovered ones too) with its attempt and details, the events, the
 * window over time and each site's attempts; the same events are in `dcm strategy events`. The page
 * is printed to PDF by Chromium, its first page made a PNG by pdftoppm; every file stays in the
 * test's temporary folder.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { json, withSql } from '../helpers/fleet.js';
import { history, killLeftovers, names, spawnDcm, type HistoryRun } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { OPS_HOST, pauseResizeResumeKill, recordedEvents, type RecordedEvent } from '../helpers/operator.js';
import { CHROMIUM, openFile, withChromium } from '../helpers/browser.js';
import { dcmQuickOk } from '../helpers/quick.js';

const HOST = OPS_HOST;
/** A run's reason as the page must show it: text, never markup. */
const HOSTILE = 'site down: <img src=x onerror=alert(1)> & "more"';
const BAD = ['failed', 'timeout', 'interrupted'];

/** Fails the runs of a subcloud while `$FLAKY/<cloud>.down` exists, and once if `.once` does; else the logging step. */
const flakySh = (step: string) => `#!/bin/sh
m="$FLAKY/$DCM_CLOUD"
if [ -e "$m.once" ]; then rm -f "$m.once"; echo "quota exceeded, try again" >&2; exit 3; fi
if [ -e "$m.down" ]; then echo '${HOSTILE}' >&2; exit 4; fi
exec ${step} "$@"
`;

let f: ExecFixture;
let config: string;
let html: string;
let ev: RecordedEvent[];
let runs: HistoryRun[];
/** The pid of the apply killed with SIGKILL. */
let killedPid: number;

const as = (user: string) => ({ ...f.env, USER: user, DCM_HOST: HOST });
const events = () => recordedEvents(f.db);
/** The page's times are to the second. */
const toSecond = (t: string) => t.slice(0, 19);

beforeAll(async () => {
  f = execFixture();
  const flaky = path.join(f.dir, 'flaky');
  fs.mkdirSync(flaky);
  f.env.FLAKY = flaky;
  const script = path.join(f.dir, 'flaky.sh');
  fs.writeFileSync(script, flakySh(f.step), { mode: 0o755 });
  fs.writeFileSync(path.join(flaky, 's2.down'), '');
  fs.writeFileSync(path.join(flaky, 's3.once'), '');
  const clouds = names(6);
  dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...clouds]);
  config = f.config(
    'defaults: {backoff: 0s, env: {STEP_MIN_MS: "150", STEP_MAX_MS: "250"}}\n' +
      'states:\n' +
      `  updating patches: {run: [${script}, "{cloud}", "{state}"], retries: 1}\n` +
      `  "*": [${f.step}, "{cloud}", "{state}"]\n`,
  );
  dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--patch-id', 'PATCH-7', '--max-parallel-subclouds', '1', '--driver', 'exec', '--exec-config', config]);

  // bob applies; alice pauses, widens the window and resumes from another shell; then apply is killed.
  killedPid = await pauseResizeResumeKill(f.db, as);

  // carol re-applies to the end: s2 fails both its runs of updating patches (the config's retry too).
  const second = spawnDcm(['--db', f.db, 'strategy', 'apply'], as('carol'));
  expect((await second.done).code).toBe(1);

  // The site is fixed; erin retries, bob applies what is left.
  fs.rmSync(path.join(flaky, 's2.down'));
  dcmQuickOk(['--db', f.db, 'strategy', 'retry'], { env: as('erin') });
  const third = spawnDcm(['--db', f.db, 'strategy', 'apply'], as('bob'));
  expect((await third.done).code).toBe(0);

  html = path.join(f.dir, 'postmortem.html');
  dcmQuickOk(['--db', f.db, 'strategy', 'report', '--html', html]);
  ev = events();
  runs = history(f.db);
}, 300_000);

afterAll(() => {
  killLeftovers();
  f?.cleanup();
});

describe('the report of a run with failures, a retry, a pause, an update and a kill -9', () => {
  test('the record: `strategy events` holds the pause, resume, update, the re-apply after the kill and the retry', () => {
    const seen = ev.map((e) => e.event);
    // In this order, with other events between them.
    const wanted = ['apply started', 'paused', 'updated', 'resumed', 'apply started', 'lock taken over', 'apply ended', 'retried', 'apply started', 'apply ended'];
    let at = 0;
    for (const w of wanted) {
      at = seen.indexOf(w, at);
      expect({ event: w, found: at >= 0 }).toEqual({ event: w, found: true });
      at++;
    }
    expect(ev.find((e) => e.event === 'updated')!.details).toBe('max parallel subclouds: 1 -> 2; stage 1 window: 1 -> 2');
    expect(ev.find((e) => e.event === 'lock taken over')!.user).toBe('carol');
    expect(ev.filter((e) => e.event === 'apply started').map((e) => e.details)).toEqual(['initial -> applying', 'resuming (state applying)', 'initial -> applying']);
    // The history the page must show: s3's failure recovered by the config's retry, s2's two by strategy
    // retry (a run cut off by the kill, if one was, is beside the point here).
    const of = (cloud: string) => runs.filter((r) => r.cloud === cloud && r.state === 'updating patches' && r.outcome !== 'interrupted').map((r) => r.outcome);
    expect(of('s2').slice(-3)).toEqual(['failed', 'failed', 'ok']);
    expect(of('s3').slice(-2)).toEqual(['failed', 'ok']);
  });

  test('in Chromium: what was rolled out, every failed run, the events, the window over time, the attempts per site', async () => {
    const bad = runs.filter((r) => BAD.includes(r.outcome));
    expect(bad.length).toBeGreaterThanOrEqual(3);
    await withChromium(async (browser) => {
      const o = await openFile(browser, html);
      expect(o.errors).toEqual([]);
      expect(o.outside).toEqual([]);
      const page = await o.page.evaluate(() => {
        const cells = (tr: Element) => [...tr.querySelectorAll('td')].map((td) => td.textContent!.trim());
        return {
          rollout: Object.fromEntries([...document.querySelectorAll<HTMLElement>('#rollout dd')].map((dd) => [dd.dataset.key, dd.textContent!.trim()])),
          failedHeading: document.querySelector('#failed-runs h2')!.textContent,
          failedRuns: [...document.querySelectorAll('#failed-runs tr.failed-run')].map(cells),
          failedSteps: document.querySelector('#failures h2')!.textContent,
          events: [...document.querySelectorAll('#events tr.event')].map(cells),
          marks: [...document.querySelectorAll<SVGGElement>('.stage g.event-mark')].map((g) => g.dataset.event),
          windows: [...document.querySelectorAll('.stage[data-stage="1"] table.windows tr.window')].map(cells),
          stageHeading: document.querySelector('.stage[data-stage="1"] h3')!.textContent,
          attempts: Object.fromEntries(
            [...document.querySelectorAll<HTMLElement>('#attempts tr.site')].map((tr) => [
              tr.dataset.cloud,
              Object.fromEntries([...tr.querySelectorAll<HTMLElement>('td[data-state]')].map((td) => [td.dataset.state, td.textContent])),
            ]),
          ),
          attemptRows: document.querySelectorAll('#attempts tr.site').length,
          deathsHeading: document.querySelector('#deaths h2')?.textContent ?? null,
          deaths: [...document.querySelectorAll('#deaths tr.death')].map(cells),
          diedCard: document.querySelector<HTMLElement>('#summary .card[data-key="orchestrators died"] .n')?.textContent ?? null,
          // Hostile details are text: no element came of them.
          images: document.querySelectorAll('img').length,
        };
      });

      // What was rolled out.
      const digest = crypto.createHash('sha256').update(fs.readFileSync(config)).digest('hex');
      expect(page.rollout).toMatchObject({
        type: 'patch',
        'option --patch-id': 'PATCH-7',
        driver: 'exec',
        subclouds: 'every eligible subcloud',
        'stop on failure': 'no',
      });
      expect(page.rollout['exec config sha256']).toBe(`${digest} of the file as read at create`);
      const update = ev.find((e) => e.event === 'updated')!;
      expect(page.rollout['max parallel subclouds']).toBe(`1 at create; 2 from ${toSecond(update.time)} (strategy update by alice)`);
      expect(page.rollout.created).toBe(toSecond(json<{ created_at: string }>(dcmQuickOk(['--db', f.db, 'strategy', 'show', '-f', 'json'])).created_at));

      // Every run that did not end ok, recovered ones too, with its attempt and details; the count says so.
      const recovered = (r: HistoryRun) => runs.find((o) => o.cloud === r.cloud && o.state === r.state && o.outcome === 'ok' && o.attempt > r.attempt);
      expect(page.failedHeading).toBe(`Failed runs (${bad.length}, ${bad.filter(recovered).length} recovered by a retry)`);
      expect(page.failedRuns.map((c) => [c[1], c[3], Number(c[4]), c[5], c[6]])).toEqual(bad.map((r) => [r.cloud, r.state, r.attempt, r.outcome, r.details]));
      expect(page.failedRuns.map((c) => c[7])).toEqual(
        bad.map((r) => {
          const ok = recovered(r);
          return ok ? `attempt ${ok.attempt} ok at ${toSecond(ok.finished_at!)}` : `no: the step is ${dcmQuickOk(['--db', f.db, 'strategy-step', 'show', r.cloud, '-f', 'value', '-c', 'state']).stdout.trim()}`;
        }),
      );
      // s3's failure, recovered by the config's retry; s2's two, by strategy retry after the site was fixed.
      expect(page.failedRuns.filter((c) => c[1] === 's3' && c[5] === 'failed').map((c) => c[6])).toEqual(['exit 3: quota exceeded, try again']);
      const s2 = page.failedRuns.filter((c) => c[1] === 's2' && c[5] === 'failed');
      expect(s2.map((c) => c[6])).toEqual([`exit 4: ${HOSTILE}`, `exit 4: ${HOSTILE}`]);
      expect(s2.map((c) => c[7].startsWith('attempt '))).toEqual([true, true]);
      expect(page.images).toBe(0);
      // The orchestrator killed with SIGKILL is named as one that died: who found it gone and how.
      expect(page.diedCard).toBe('1');
      expect(page.deathsHeading).toBe('Orchestrators that died (1)');
      const takeover = ev.find((e) => e.event === 'lock taken over')!;
      expect(page.deaths).toHaveLength(1);
      expect(page.deaths[0].slice(0, 3)).toEqual([toSecond(takeover.time), `pid ${killedPid} on ${HOST}`, 'no longer running']);
      expect(page.deaths[0][3]).toMatch(new RegExp(`^carol@${HOST} \\(pid \\d+\\)$`));
      // No step ended failed, and the page does not pretend nothing did.
      expect(page.failedSteps).toBe('Failed steps (0)');

      // The events, in the table and as marks on the timeline.
      expect(page.events.map((c) => [c[0], c[1], c[3]])).toEqual(ev.map((e) => [toSecond(e.time), e.event, e.details]));
      expect(page.marks).toEqual(ev.map((e) => e.event));

      // The window over time: 1 as created, 2 from alice's update (made while the stage ran) to the end.
      expect(page.windows.map((c) => [c[2], c[3]])).toEqual([
        ['1', 'as created'],
        ['2', `strategy update by alice@${HOST} at ${toSecond(update.time)}`],
      ]);
      expect(page.windows[1][0]).toBe(toSecond(update.time));
      expect(page.windows[0][1]).toBe(toSecond(update.time));
      expect(page.stageHeading).toContain('window 1 → 2');

      // Each site's attempts per state.
      expect(page.attemptRows).toBe(6);
      const outcomes = (cloud: string, state: string) => runs.filter((r) => r.cloud === cloud && r.state === state).sort((a, b) => a.attempt - b.attempt).map((r) => r.outcome);
      for (const cloud of names(6)) {
        for (const state of ['pre check', 'updating patches', 'finishing patch strategy']) {
          const o2 = outcomes(cloud, state);
          expect({ cloud, state, cell: page.attempts[cloud][state] }).toEqual({ cloud, state, cell: o2.length === 1 ? o2[0] : `${o2.length}: ${o2.join(', ')}` });
        }
      }
      expect(page.attempts.s3['updating patches']).toMatch(/failed, ok$/);
      expect(page.attempts.s2['updating patches']).toMatch(/failed, failed, ok$/);

      // On paper: nothing wider than the page, and the same sections.
      await o.page.emulateMediaType('print');
      await o.page.setViewport({ width: 720, height: 1000 });
      const printed = await o.page.evaluate(() => ({
        width: document.documentElement.scrollWidth,
        tables: [...document.querySelectorAll('table')].filter((t) => t.getBoundingClientRect().right > document.documentElement.clientWidth + 1).length,
        timelines: [...document.querySelectorAll('svg.timeline')].map((svg) => svg.getBoundingClientRect().right <= document.documentElement.clientWidth + 1),
        sections: [...document.querySelectorAll('section')].map((s) => s.id),
      }));
      expect(printed.width).toBeLessThanOrEqual(720);
      expect(printed.tables).toBe(0);
      expect(printed.timelines).toEqual([true]);
      expect(printed.sections).toEqual(expect.arrayContaining(['rollout', 'events', 'failed-runs', 'failures', 'attempts']));
      await o.page.emulateMediaType('screen');
      await o.page.setViewport({ width: 1280, height: 900 });
      const shot = path.join(f.dir, 'postmortem.png');
      await o.page.screenshot({ path: shot, fullPage: true });
      expect(fs.statSync(shot).size).toBeGreaterThan(0);
    });
  }, 120_000);

  test('a strategy made before create kept the file digest: the stored config is digested, and the page says so', async () => {
    const stored = await withSql(f.db, async (d) => {
      await d.prepare("UPDATE strategy SET extra_args = json_remove(extra_args, '$.exec_config_sha256')").run();
      return (await d.prepare("SELECT json_extract(extra_args, '$.exec_config') FROM strategy").pluck().get()) as string;
    });
    const page = dcmQuickOk(['--db', f.db, 'strategy', 'report', '--html', '-']).stdout;
    const digest = crypto.createHash('sha256').update(stored).digest('hex');
    expect(page).toContain(`<dd data-key="exec config sha256"><code>${digest}</code> <span class="muted">of the config as stored (this strategy predates the file digest)</span></dd>`);
  });

  // poppler-utils: pdftoppm, and pdfinfo to count the pages.
  const poppler = spawnSync('sh', ['-c', 'command -v pdftoppm && command -v pdfinfo'], { encoding: 'utf8' });
  const pdftoppm = poppler.status === 0 ? poppler.stdout.split('\n')[0] : '';
  (pdftoppm ? test : test.skip)(
    pdftoppm
      ? 'printed by Chromium (--print-to-pdf): at least one page; its first page as a PNG (pdftoppm)'
      : 'SKIPPED: pdftoppm or pdfinfo is not installed (apt-get install -y poppler-utils; .ci/run installs it)',
    async () => {
      const pdf = path.join(f.dir, 'postmortem.pdf');
      const profile = path.join(f.dir, 'chromium-profile');
      const args = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', `--user-data-dir=${profile}`, '--no-pdf-header-footer', `--print-to-pdf=${pdf}`, `file://${html}`];
      const child = spawn(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
      expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
      expect(fs.readFileSync(pdf).subarray(0, 5).toString('latin1')).toBe('%PDF-');
      const info = spawnSync('pdfinfo', [pdf], { encoding: 'utf8' });
      const pages = Number(/^Pages:\s+(\d+)$/m.exec(info.stdout)?.[1] ?? 0);
      expect(pages).toBeGreaterThanOrEqual(1);
      const prefix = path.join(f.dir, 'postmortem-page1');
      const r = spawnSync(pdftoppm, ['-png', '-r', '60', '-f', '1', '-l', '1', '-singlefile', pdf, prefix], { encoding: 'utf8' });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      const png = fs.readFileSync(`${prefix}.png`);
      expect(png.length).toBeGreaterThan(0);
      expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    },
    120_000,
  );
});
