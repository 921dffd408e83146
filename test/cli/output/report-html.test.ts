/**
 * The report's HTML from a model (no browser): every value a person or a site wrote — names,
 * details, options, users, hosts — is escaped in every section, the post-mortem ones included;
 * failed runs are counted even when a retry recovered them; the page has a print stylesheet.
 * What Chromium shows of a real apply is in test/e2e/report*.test.ts.
 */
import { describe, expect, test } from '@jest/globals';
import { renderHtmlReport } from '../../../src/cli/output/report-html.js';
import { buildReport, type ReportInput } from '../../../src/domain/report.js';

const S = 1_000_000;
const T0 = 1_700_000_000 * S;
const EVIL = `<img src=x onerror=alert(1)>&"'`;
const ESCAPED = '&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;';

function model(): ReturnType<typeof buildReport> {
  const input: ReportInput = {
    strategy: {
      type: 'patch',
      state: 'complete',
      createdAt: '2026-01-01 00:00:00.000000',
      updatedAt: null,
      stopOnFailure: false,
      subcloudApplyType: null,
      maxParallelSubclouds: 2,
      driver: 'exec',
      maxFailures: null,
      typeOptions: [['--patch-id', `P${EVIL}`]],
      targets: [['cloud names', `s${EVIL} t1`]],
      execConfig: { sha256: 'ab'.repeat(32), of: 'file' },
    },
    states: ['a', 'b'],
    stages: [{ stage: 1, window: 2, group: `g${EVIL}` }],
    steps: [
      { id: 1, cloud: `s${EVIL}`, stage: 1, state: 'complete', details: '', attempt: 2 },
      { id: 2, cloud: 't1', stage: 1, state: 'complete', details: '', attempt: 1 },
    ],
    runs: [
      { stepId: 1, state: 'a', attempt: 1, startUs: T0, finishUs: T0 + S, outcome: 'failed', details: `exit 1: ${EVIL}` },
      { stepId: 1, state: 'a', attempt: 2, startUs: T0 + 2 * S, finishUs: T0 + 3 * S, outcome: 'ok', details: '' },
      { stepId: 1, state: 'b', attempt: 1, startUs: T0 + 3 * S, finishUs: T0 + 4 * S, outcome: 'ok', details: '' },
      { stepId: 2, state: 'a', attempt: 1, startUs: T0, finishUs: T0 + S, outcome: 'interrupted', details: '' },
      { stepId: 2, state: 'a', attempt: 2, startUs: T0 + S, finishUs: T0 + 2 * S, outcome: 'ok', details: '' },
      { stepId: 2, state: 'b', attempt: 1, startUs: T0 + 2 * S, finishUs: T0 + 3 * S, outcome: 'ok', details: '' },
    ],
    events: [{ atUs: T0 + 2 * S, event: 'updated', user: `u${EVIL}`, host: `h${EVIL}`, pid: 1, details: 'max parallel subclouds: 1 -> 2; stage 1 window: 1 -> 2' }],
    nowUs: T0 + 10 * S,
  };
  return buildReport(input);
}

describe('renderHtmlReport', () => {
  const html = renderHtmlReport(model(), T0 + 10 * S);

  test('every hostile value is text: escaped wherever it goes, never markup', () => {
    expect(html).not.toContain('<img');
    expect(html).not.toContain(EVIL);
    // Options, targets, group, cloud (lanes, failed runs, attempts), details, user and host.
    expect(html.split(ESCAPED).length - 1).toBeGreaterThanOrEqual(9);
  });

  test('failed runs are counted even when recovered; no step failed says so without a bare 0', () => {
    expect(html).toContain('<h2>Failed runs (2, 2 recovered by a retry)</h2>');
    expect(html).toContain('<h2>Failed steps (0)</h2>');
    expect(html).toContain('No step ended failed (2 failed runs above).');
  });

  test('what was rolled out, the window over time, and the attempts are on the page', () => {
    expect(html).toContain(`<dd data-key="exec config sha256"><code>${'ab'.repeat(32)}</code>`);
    expect(html).toContain('1 at create; 2 from 2023-11-14 22:13:22 (strategy update by u&lt;img');
    expect(html).toMatch(/<tr class="window" data-window="1">.*as created/);
    expect(html).toContain('window 1 → 2');
    expect(html).toContain('>2: interrupted, ok<');
  });

  test('a print stylesheet: nothing scrolls, rows do not split, headers repeat', () => {
    const print = html.slice(html.indexOf('@media print'));
    expect(print).toContain('.scroll{overflow:visible}');
    expect(print).toMatch(/tr,[^{]*\{break-inside:avoid;page-break-inside:avoid\}/);
    expect(print).toContain('thead{display:table-header-group}');
  });

  test('past 500 steps, the attempts list only the sites with a retry or a run that did not end ok', () => {
    const m = model();
    const steps = Array.from({ length: 600 }, (_, i) => ({ id: i + 1, cloud: `x${i + 1}`, stage: 1, state: 'complete', details: '', attempt: 1 }));
    const runs = steps.map((st) => ({ stepId: st.id, state: 'a', attempt: 1, startUs: T0, finishUs: T0 + S, outcome: 'ok', details: '' }));
    runs.push({ stepId: 7, state: 'b', attempt: 1, startUs: T0 + S, finishUs: T0 + 2 * S, outcome: 'timeout', details: 'timed out after 1s' });
    const big = buildReport({ strategy: m.strategy, states: m.states, stages: [{ stage: 1, window: 50, group: null }], steps, runs, nowUs: T0 + 10 * S });
    const page = renderHtmlReport(big, T0 + 10 * S);
    const attempts = page.slice(page.indexOf('<section id="attempts">'), page.indexOf('<section id="durations">'));
    expect(attempts.match(/<tr class="site"/g)).toHaveLength(1);
    expect(attempts).toContain('data-cloud="x7"');
    expect(attempts).toContain('(the 1 of 600 subclouds that ran a state more than once or had a run that did not end ok)');
  });
});
