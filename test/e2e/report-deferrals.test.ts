/**
 * Issue 34, item 2 (the deferrals): the report tells a site that did not answer apart from a
 * failure. Its deferred runs have their own colour, card and word ("deferred" in "Attempts per
 * site"); they are neither rows of "Failed runs" nor counted in its card. "What was rolled out"
 * lists every create option, the deferral and the audit among them; the audits' findings have a
 * section of their own. Read in Chromium.
 */
import { describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { dcm} from '../helpers/cli.js';
import { tempPerTest } from '../helpers/history.js';
import { openFile, withChromium } from '../helpers/browser.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

describe('strategy report: deferrals', () => {
  test('deferred runs: their own card and word, not failed runs', async () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's2', '--label', 'sim_unreachable=yes']);
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '200ms', '--max-parallel-subclouds', '1', '--defer-delay', '100ms']);
    expect(dcm(['--db', t.db, '-q', 'strategy', 'apply']).code).toBe(1);
    const history = JSON.parse(dcmQuickOk(['--db', t.db, 'strategy-step', 'history', 's2', '-f', 'json']).stdout) as { details: string }[];
    const deferrals = history.filter((h) => h.details.startsWith('deferred: ')).length;
    expect(deferrals).toBeGreaterThanOrEqual(1);
    const html = path.join(t.dir, 'r.html');
    dcmQuickOk(['--db', t.db, 'strategy', 'report', '--html', html]);
    await withChromium(async (browser) => {
      const o = await openFile(browser, html);
      expect(o.errors).toEqual([]);
      const seen = await o.page.evaluate(() => ({
        cards: Object.fromEntries([...document.querySelectorAll<HTMLElement>('#summary .card')].map((c) => [c.dataset.key, c.querySelector('.n')!.textContent])),
        failedRows: [...document.querySelectorAll('#failed-runs tbody tr')].map((r) => r.textContent),
        cell: (() => {
          const td = document.querySelector<HTMLElement>('#attempts tr.site[data-cloud="s2"] td[data-state="pre check"]')!;
          return { text: td.textContent, cls: td.className, color: getComputedStyle(td).color };
        })(),
      }));
      // The last try, past the rest of its stage, is the one failure: unreachable.
      expect(seen.cards['failed runs']).toBe('1');
      expect(seen.cards['deferred runs']).toBe(String(deferrals));
      expect(seen.failedRows).toHaveLength(1);
      expect(seen.failedRows[0]).toContain('unreachable');
      expect(seen.cell.text).toBe(`${deferrals + 1}: ${[...Array(deferrals).fill('deferred'), 'failed'].join(', ')}`);
      expect(seen.cell.cls).toBe('bad');
    });
  }, 90_000);

  test('what was rolled out: every create option, the deferral and the audit among them', async () => {
    const t = temp();
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3']);
    dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's1', 's2', 's3', '--sync', 'patching=in-sync']);
    dcmQuickOk([
      '--db', t.db, 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--target-version', '22.12.3',
      '--sim-latency', '0..10ms', '--sim-fail', 's2=pre check', '--sim-seed', '7', '--state-timeout', '10m',
      '--defer-delay', '5m', '--defer-until', '2026-12-05 06:00', '--sim-audit', '--require-audit', '--on-event', 'true',
    ]);
    expect(dcm(['--db', t.db, '-q', 'strategy', 'apply']).code).toBe(1);
    const html = path.join(t.dir, 'r.html');
    dcmQuickOk(['--db', t.db, 'strategy', 'report', '--html', html]);
    await withChromium(async (browser) => {
      const o = await openFile(browser, html);
      expect(o.errors).toEqual([]);
      const rollout = await o.page.evaluate(() =>
        Object.fromEntries([...document.querySelectorAll<HTMLElement>('#rollout dd')].map((dd) => [dd.dataset.key, dd.textContent!.trim()])),
      );
      expect(rollout).toMatchObject({
        'option --patch-id': 'P1',
        subclouds: '--target-version 22.12.3',
        'create --state-timeout': '10m',
        'create --defer-delay': '5m',
        'create --defer-until': '2026-12-05 06:00',
        'create audit after each site': 'yes, --require-audit: a site that disagrees fails its step',
        'create --on-event': 'true',
        'create --sim-latency': '0ms..10ms',
        'create --sim-fail': 's2=pre check',
        'create --sim-seed': '7',
      });
    });
    // Without them: said to be none (the deferral) or no (the audit), never left out.
    const u = temp();
    dcmQuickOk(['--db', u.db, 'subcloud', 'add', 's1']);
    dcmQuickOk(['--db', u.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
    const page = dcmQuickOk(['--db', u.db, 'strategy', 'report', '--html', '-']).stdout;
    expect(page).toContain('<dd data-key="create --defer-delay">None</dd>');
    expect(page).toContain('<dd data-key="create audit after each site">no</dd>');
    expect(page).not.toContain('create --on-event');
    // A strategy without an audit has no findings to show.
    expect(page).not.toContain('id="audit"');
  }, 90_000);

  test("the audit's findings: a site whose audit did not answer, a warning, or with --require-audit its step's failure", async () => {
    for (const require of [false, true]) {
      const t = temp();
      dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3']);
      dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--sim-audit', ...(require ? ['--require-audit'] : [])]);
      // s2's link dies after its last state: its audit gets no answer. (Not offline: a site taken
      // out of service starts no state, issue 49.)
      dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's2', '--label', 'sim_unreachable=audit']);
      // Complete with the audit's warning: exit 5 (issue 49); --require-audit fails the step: exit 1.
      expect(dcm(['--db', t.db, '-q', 'strategy', 'apply']).code).toBe(require ? 1 : 5);
      const html = path.join(t.dir, 'r.html');
      dcmQuickOk(['--db', t.db, 'strategy', 'report', '--html', html]);
      await withChromium(async (browser) => {
        const o = await openFile(browser, html);
        expect(o.errors).toEqual([]);
        const seen = await o.page.evaluate(() => ({
          heading: document.querySelector('#audit h2')?.textContent ?? null,
          rows: [...document.querySelectorAll('#audit tr.finding')].map((tr) => [...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent)),
        }));
        expect(seen.heading).toBe('Audit findings (1)');
        expect(seen.rows).toEqual([
          ['s2', 'finishing patch strategy', require ? 'failed the step (--require-audit)' : 'warning: the step completed', 'audit: the site does not answer (label sim_unreachable)'],
        ]);
      });
    }
  }, 90_000);
});
