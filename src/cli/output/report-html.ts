/**
 * The report as one self-contained HTML page: inline CSS and SVG, no script, no font, image or
 * anything else fetched, so it opens offline and can be mailed as it is. Tooltips are SVG <title>s.
 * Drawn from the report's model (src/domain/report.ts, pure data), beside the other renderers.
 */
import { esc, fmtMs, fmtTime } from './html-text.js';
import { orchestratorDeaths } from '../../domain/report-deaths.js';
import { attemptsSection, auditSection, deathsSection, waitsSection, failedRunsSection, rolloutSection, stageWindowsTable, windowsText } from './report-sections.js';
import type { DurationRow, Lane, PlacedEvent, ReportModel, StageTimeline } from '../../domain/report.js';

/** Colours of the operation states, in the type's order (red, orange and grey are kept for trouble). */
const PALETTE = ['#7fb3e6', '#4a8fd9', '#2f6db5', '#7c5fc4', '#2a9d8f', '#b26fb0', '#8c6d4f', '#d4b106', '#5e8c31', '#3d5a80'];
// A deferred run (the site did not answer; tried again later) has its own colour: not a failure's red.
const OUTCOME_COLOR: Record<string, string> = { failed: '#d64541', timeout: '#e8862a', interrupted: '#a0a4a8', deferred: '#2f8fbf' };
const FINAL_COLOR: Record<string, string> = {
  complete: '#3c9d5d',
  failed: '#d64541',
  deferred: '#e0a030',
  aborted: '#8a8f94',
  'in progress': '#4a8fd9',
  initial: '#d5d9de',
};

const CHART_X = 170;
const CHART_W = 800;
const VIEW_W = CHART_X + CHART_W + 10;
const AXIS_H = 22;
/** The band above a stage's axis where its events' labels go, in rows taken in turn so that neighbours (a re-apply's three events at once) do not overlap. */
const EVENT_ROWS = 3;
const EVENT_ROW_H = 12;
const EVENT_COLOR = '#6b4fbb';

function colorOf(states: readonly string[]): (state: string) => string {
  return (state) => {
    const i = states.indexOf(state);
    return PALETTE[(i < 0 ? states.length : i) % PALETTE.length];
  };
}

/** Round tick steps for an axis of `spanMs`. */
function tickStep(spanMs: number): number {
  const steps = [100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000];
  return steps.find((s) => spanMs / s <= 8) ?? 86_400_000 * Math.ceil(spanMs / 86_400_000 / 8);
}

function laneHeight(lanes: number): number {
  if (lanes <= 40) return 16;
  if (lanes <= 120) return 11;
  if (lanes <= 300) return 5;
  return 3;
}

function laneSvg(
  lane: Lane,
  y: number,
  h: number,
  x: (us: number) => number,
  color: (s: string) => string,
  showLabel: boolean,
  marker: boolean,
): string {
  const parts: string[] = [];
  const who = lane.count === 1 ? lane.label : `${lane.label} (${lane.count} subclouds${lane.failed ? `, ${lane.failed} failed` : ''})`;
  parts.push(`<g class="lane" data-count="${lane.count}" data-final="${esc(lane.finalState)}" data-label="${esc(lane.label)}">`);
  parts.push(`<rect class="bg" x="0" y="${y}" width="${VIEW_W}" height="${h}"><title>${esc(who)}: ${esc(lane.finalState)}</title></rect>`);
  if (showLabel) {
    parts.push(`<rect x="4" y="${y + h / 2 - 4}" width="8" height="8" rx="2" fill="${FINAL_COLOR[lane.finalState] ?? '#999'}"/>`);
    parts.push(`<text x="16" y="${y + h / 2 + (h >= 16 ? 4 : 3)}" class="label${lane.failed ? ' bad' : ''}${h < 16 ? ' small' : ''}">${esc(lane.label.length > 22 ? `${lane.label.slice(0, 21)}…` : lane.label)}</text>`);
  } else {
    parts.push(`<rect x="${CHART_X - 8}" y="${y}" width="4" height="${Math.max(1, h - 1)}" fill="${FINAL_COLOR[lane.finalState] ?? '#999'}"/>`);
    // Lanes too thin for a name each: every few lanes, the name of the first subcloud in it.
    if (marker) parts.push(`<text x="${CHART_X - 14}" y="${y + 4}" class="label small end">${esc(lane.label.split(' … ')[0])}</text>`);
  }
  const pad = h >= 8 ? 2 : 0.5;
  for (const s of lane.segments) {
    const x0 = x(s.startUs);
    const w = Math.max(0.6, x(s.endUs) - x0);
    const fill = OUTCOME_COLOR[s.outcome] ?? color(s.state);
    const opacity = s.share === undefined ? '' : ` fill-opacity="${(0.3 + 0.7 * s.share).toFixed(2)}"`;
    const running = s.outcome === 'running' ? ' class="running"' : '';
    parts.push(`<rect${running} x="${x0.toFixed(1)}" y="${y + pad}" width="${w.toFixed(1)}" height="${Math.max(1, h - 2 * pad)}" fill="${fill}"${opacity}><title>${esc(s.title)}</title></rect>`);
  }
  // In lanes of several subclouds a failure may hide under the dominant state: mark each one.
  if (lane.count > 1) {
    for (const at of lane.failuresAt) parts.push(`<rect x="${(x(at) - 0.75).toFixed(1)}" y="${y}" width="1.5" height="${h}" fill="${OUTCOME_COLOR.failed}"/>`);
  }
  parts.push('</g>');
  return parts.join('');
}

/** Who did what, as an event's tooltip and its row in the events table say it. */
const eventWho = (e: PlacedEvent) => `${e.user}@${e.host} (pid ${e.pid})`;

/** Label rows at most: past them a label is left out (its line and tooltip stay; the events table lists it). */
const MAX_EVENT_ROWS = 12;
/** A label's width in the chart's units: 11px text, a generous 7 a character, so that none is underestimated. */
const labelWidth = (text: string) => text.length * 7 + 6;

/**
 * Where each event's line and label go: the label in the first row where it clears every label
 * already there, so that labels of events at one moment (a pause, an update and a resume typed
 * together) stack instead of being drawn on top of each other (issue 34). Row -1: no room.
 */
function layoutEventLabels(events: readonly PlacedEvent[], x: (us: number) => number): { x: number; row: number; anchor: 'start' | 'end' }[] {
  const rows: [number, number][][] = [];
  return events.map((e) => {
    const ex = Math.min(CHART_X + CHART_W, Math.max(CHART_X, x(e.atUs)));
    const anchor = ex > CHART_X + CHART_W - 80 ? 'end' : 'start';
    const w = labelWidth(e.event);
    const span: [number, number] = anchor === 'end' ? [ex - w, ex] : [ex, ex + w];
    let row = rows.findIndex((r) => r.every(([a, b]) => span[1] <= a || span[0] >= b));
    if (row < 0 && rows.length < MAX_EVENT_ROWS) row = rows.push([]) - 1;
    if (row >= 0) rows[row].push(span);
    return { x: ex, row, anchor };
  });
}

/** The rows the stage's labels take (at least EVENT_ROWS, so that most charts keep one height). */
function eventRowsOf(events: readonly PlacedEvent[], x: (us: number) => number): number {
  return Math.max(EVENT_ROWS, ...layoutEventLabels(events, x).map((l) => l.row + 1));
}

/**
 * The stage's events as marked vertical lines across its lanes, each labelled with the event's
 * name (its time, who and details in the tooltip). An event outside the stage's span (between two
 * stages) is drawn at the edge it is nearest to.
 */
function eventMarks(events: readonly PlacedEvent[], x: (us: number) => number, height: number): string {
  const layout = layoutEventLabels(events, x);
  return events
    .map((e, i) => {
      const { row, anchor } = layout[i];
      const ex = layout[i].x.toFixed(1);
      const ty = EVENT_ROW_H * (Math.max(0, row) + 1) - 3;
      const tip = `${fmtTime(e.atUs)} ${e.event} by ${eventWho(e)}${e.details ? `: ${e.details}` : ''}${e.reason ? ` (reason: ${e.reason})` : ''}`;
      const label = row < 0 ? '' : `<text x="${ex}" y="${ty}" class="event-label" text-anchor="${anchor}" dx="${anchor === 'end' ? -2 : 2}">${esc(e.event)}</text>`;
      return (
        `<g class="event-mark" data-event="${esc(e.event)}" data-at="${e.atUs}"><title>${esc(tip)}</title>` +
        `<line x1="${ex}" x2="${ex}" y1="${ty + 2}" y2="${height}" stroke="${EVENT_COLOR}" stroke-width="1.2" stroke-dasharray="4 2"/>` +
        `${label}</g>`
      );
    })
    .join('');
}

function stageSvg(st: StageTimeline, color: (s: string) => string, events: readonly PlacedEvent[]): string {
  // A stage not started yet still has a lane per subcloud (empty), so every step is on the page.
  const started = st.startUs !== null && st.endUs !== null;
  const start = st.startUs ?? 0;
  const span = started ? Math.max(1, st.endUs! - start) : 1;
  const x = (us: number) => CHART_X + ((us - start) / span) * CHART_W;
  const h = laneHeight(st.lanes.length);
  const showLabels = h >= 8;
  const top = events.length ? eventRowsOf(events, x) * EVENT_ROW_H : 0;
  const height = top + AXIS_H + st.lanes.length * h + 4;
  const out: string[] = [];
  out.push(`<svg class="timeline" viewBox="0 0 ${VIEW_W} ${height}" width="100%" preserveAspectRatio="xMinYMin meet" role="img" aria-label="stage ${st.stage} timeline">`);
  if (top) out.push(`<g transform="translate(0 ${top})">`);
  // Axis: time from the stage's first start.
  const step = tickStep(span / 1000);
  for (let t = 0; started && t <= span / 1000 + 1e-9; t += step) {
    const tx = x(start + t * 1000);
    out.push(`<line x1="${tx.toFixed(1)}" x2="${tx.toFixed(1)}" y1="${AXIS_H - 4}" y2="${height}" class="grid"/>`);
    out.push(`<text x="${tx.toFixed(1)}" y="${AXIS_H - 8}" class="tick">+${esc(fmtMs(t))}</text>`);
  }
  const every = Math.ceil(16 / h);
  st.lanes.forEach((lane, i) => out.push(laneSvg(lane, AXIS_H + i * h, h, x, color, showLabels, i % every === 0)));
  if (top) out.push('</g>', eventMarks(events, x, height));
  out.push('</svg>');
  return out.join('');
}

function countsBar(counts: Record<string, number>, total: number): string {
  if (total === 0) return '';
  const order = ['complete', 'failed', 'aborted', 'in progress', 'initial'];
  let x = 0;
  const parts = order
    .filter((k) => counts[k] > 0)
    .map((k) => {
      const w = (counts[k] / total) * 100;
      const r = `<rect x="${x.toFixed(3)}%" y="0" width="${w.toFixed(3)}%" height="14" fill="${FINAL_COLOR[k]}"><title>${esc(k)}: ${counts[k]}</title></rect>`;
      x += w;
      return r;
    });
  return `<svg class="bar" width="100%" height="14">${parts.join('')}</svg>`;
}

function histogramSvg(row: DurationRow, color: string): string {
  const max = Math.max(1, ...row.histogram);
  const n = row.histogram.length;
  const w = 240;
  const h = 34;
  const bw = w / n;
  const bars = row.histogram
    .map((c, i) => (c ? `<rect x="${(i * bw + 0.5).toFixed(1)}" y="${(h - (c / max) * h).toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${((c / max) * h).toFixed(1)}" fill="${color}"><title>${c} runs</title></rect>` : ''))
    .join('');
  return `<svg class="hist" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}">${bars}<line x1="0" x2="${w}" y1="${h - 0.5}" y2="${h - 0.5}" class="axis"/></svg>`;
}

const CSS = `
:root{--fg:#1f2328;--muted:#656d76;--line:#d8dee4;--bg:#fff;--panel:#f6f8fa;--bad:#d64541}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 10px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:18px 0 6px;font-weight:600}
.muted{color:var(--muted)}
.badge{display:inline-block;padding:1px 10px;border-radius:12px;font-size:13px;font-weight:600;color:#fff;vertical-align:middle;margin-left:8px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(130px,1fr));gap:10px;margin:16px 0 10px}
.card{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.card .n{font-size:22px;font-weight:650;font-variant-numeric:tabular-nums}.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card.bad .n{color:var(--bad)}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:12px 0}dl.meta dt{color:var(--muted)}dl.meta dd{margin:0}
.bar{display:block;border-radius:4px;overflow:hidden;background:var(--panel)}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;margin:6px 0 10px;font-size:12px;color:var(--muted)}
.legend span::before{content:"";display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px;background:var(--c)}
.stage{border:1px solid var(--line);border-radius:8px;padding:4px 12px 10px;margin:12px 0}
svg.timeline{display:block;font-size:11px}
svg .bg{fill:transparent}svg .lane:hover .bg{fill:#eef3fb}
svg .label{fill:var(--fg)}svg .label.small{font-size:9px}svg .label.end{text-anchor:end;fill:var(--muted)}svg .label.bad{fill:var(--bad);font-weight:600}
svg .tick{fill:var(--muted);text-anchor:middle;font-size:10px}svg .grid{stroke:#eceff2}svg .axis{stroke:var(--line)}
svg .running{stroke:#1f2328;stroke-dasharray:2 2;stroke-width:.6}
svg .event-label{fill:${EVENT_COLOR};font-size:10px;font-weight:600}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:middle}
th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.03em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.reason{color:var(--bad);overflow-wrap:anywhere}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:0}
footer{margin-top:36px;color:var(--muted);font-size:12px}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
td.bad{color:var(--bad);font-weight:600}td.deferred{color:#2f8fbf;font-weight:600}td.none{color:var(--muted)}
tr.unrecovered td:first-child{box-shadow:inset 3px 0 0 var(--bad)}
table.windows{width:auto;margin:6px 0 2px;font-size:12px}table.windows th,table.windows td{padding:2px 10px 2px 0}
table.attempts td{white-space:nowrap}
/* On paper: black on white, nothing behind a hover, nothing cut. The tables say what the bars'
   tooltips say (each failed run, each site's attempts, each event); the timeline is scaled to the
   page's width by its viewBox; a row never splits across two pages. */
@page{margin:12mm}
@media print{
:root{--fg:#000;--muted:#333a41;--line:#8c959f;--panel:#fff;--bad:#a3201c}
body{font-size:10pt;-webkit-print-color-adjust:exact;print-color-adjust:exact}
main{max-width:none;padding:0}
h1{font-size:16pt}h2{font-size:12.5pt;margin:16pt 0 6pt;break-after:avoid;page-break-after:avoid}h3{font-size:10pt;break-after:avoid;page-break-after:avoid}
.scroll{overflow:visible}
table{font-size:8pt;width:100%}th,td{padding:2pt 4pt}th{font-size:7.5pt;color:#000}
td,code{overflow-wrap:anywhere;word-break:break-word}
table.attempts td{white-space:normal}
thead{display:table-header-group}
tr,.card,dt,dd,svg.bar{break-inside:avoid;page-break-inside:avoid}
.cards{grid-template-columns:repeat(4,1fr);gap:4pt}.card{padding:4pt 6pt;border-color:#000}.card .n{font-size:13pt}
.badge{color:#000!important;background:none!important;border:1px solid #000}
.stage{border-color:#8c959f;padding:2pt 6pt 6pt}
svg.timeline{width:100%!important;max-width:100%;height:auto}
svg .lane:hover .bg{fill:transparent}svg .tick,svg .label.end{fill:#333a41}svg .grid{stroke:#c4cad1}
footer{color:#000}
}
`;

export function renderHtmlReport(m: ReportModel, generatedAtUs: number): string {
  const color = colorOf(m.states);
  const s = m.strategy;
  const elapsed = m.startUs !== null && m.endUs !== null ? fmtMs((m.endUs - m.startUs) / 1000) : '—';
  const stateColor = FINAL_COLOR[s.state] ?? (s.state === 'applying' ? FINAL_COLOR['in progress'] : '#8a8f94');
  const out: string[] = [];
  out.push('<!doctype html><html lang="en"><head><meta charset="utf-8">');
  out.push('<meta name="viewport" content="width=device-width, initial-scale=1">');
  out.push(`<title>dcm report: ${esc(s.type)} strategy, ${esc(s.state)}</title><style>${CSS}</style></head><body><main>`);

  // Summary.
  out.push(`<header><h1>${esc(s.type)} strategy<span class="badge" style="background:${stateColor}">${esc(s.state)}</span></h1>`);
  out.push(`<div class="muted">${m.steps} subclouds in ${m.stages.length} stage${m.stages.length === 1 ? '' : 's'} · elapsed ${esc(elapsed)}</div></header>`);
  out.push('<section id="summary"><h2>Summary</h2><div class="cards">');
  const card = (k: string, n: number | string, bad = false) => `<div class="card${bad ? ' bad' : ''}" data-key="${esc(k)}"><div class="n">${esc(n)}</div><div class="k">${esc(k)}</div></div>`;
  out.push(card('steps', m.steps));
  out.push(card('complete', m.counts.complete));
  out.push(card('failed', m.counts.failed, m.counts.failed > 0));
  // Only when there are some: most strategies never defer a step.
  if (m.counts.deferred) out.push(card('deferred', m.counts.deferred));
  out.push(card('aborted', m.counts.aborted));
  out.push(card('in progress', m.counts['in progress']));
  out.push(card('initial', m.counts.initial));
  out.push(card('failed runs', m.failedRuns.length, m.failedRuns.length > 0));
  // Runs a site did not answer, tried again later: counted apart from the failed runs.
  const deferredRuns = m.attempts.reduce((n, a) => n + a.states.reduce((k, st) => k + st.outcomes.filter((o) => o === 'deferred').length, 0), 0);
  if (deferredRuns) out.push(card('deferred runs', deferredRuns));
  // Only when one did: an orchestrator killed mid-rollout is named as one (Orchestrators that died).
  // Complete, but the site's audit disagreed (issue 49): said on a card of its own, as a failure is.
  const disagreed = (m.strategy.auditFindings ?? []).filter((f) => f.outcome === 'warning').length;
  if (disagreed) out.push(card('audit disagrees', disagreed, true));
  const deaths = orchestratorDeaths(m.events).length;
  if (deaths) out.push(card('orchestrators died', deaths, true));
  out.push(card('elapsed', elapsed));
  out.push('</div>');
  out.push(countsBar(m.counts, m.steps));
  out.push('<dl class="meta">');
  for (const [k, v] of [['first operation', fmtTime(m.startUs)], ['last operation', fmtTime(m.endUs)]]) out.push(`<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`);
  // Still running: the time left, in the words of `strategy status` and apply's view (issue 49).
  if (m.strategy.eta) out.push(`<dt>time left</dt><dd data-key="eta">${esc(m.strategy.eta)}</dd>`);
  out.push('</dl></section>');
  out.push(rolloutSection(m));
  out.push(waitsSection(m));

  // Timeline.
  out.push('<section id="timeline"><h2>Timeline</h2><div class="legend">');
  for (const st of m.states) out.push(`<span style="--c:${color(st)}">${esc(st)}</span>`);
  out.push(`<span style="--c:${OUTCOME_COLOR.failed}">failed</span><span style="--c:${OUTCOME_COLOR.timeout}">timed out</span><span style="--c:${OUTCOME_COLOR.interrupted}">interrupted</span>`);
  out.push('</div>');
  for (const st of m.stages) {
    const span = st.startUs !== null && st.endUs !== null ? fmtMs((st.endUs - st.startUs) / 1000) : 'not started';
    const lanesNote = st.perLane > 1 ? ` · ${st.lanes.length} lanes of up to ${st.perLane} subclouds (colour: the state that took most of their time; shade: how busy; red marks: failures)` : '';
    const counts = (['complete', 'failed', 'deferred', 'aborted', 'in progress', 'initial'] as const)
      .filter((k) => st.counts[k])
      .map((k) => `${st.counts[k]} ${k}`)
      .join(', ');
    out.push(`<div class="stage" data-stage="${st.stage}" data-steps="${st.steps}">`);
    out.push(`<h3>Stage ${st.stage}${st.group ? ` · ${esc(st.group)}` : ''} · ${esc(windowsText(st))} · ${st.steps} subcloud${st.steps === 1 ? '' : 's'} · ${esc(span)}</h3>`);
    out.push(`<div class="muted">${esc(counts)}${esc(lanesNote)}${st.startUs !== null ? ` · from ${esc(fmtTime(st.startUs))}` : ' · no operation has run in this stage'}</div>`);
    out.push(stageSvg(st, color, m.events.filter((e) => e.stage === st.stage)));
    out.push(stageWindowsTable(st));
    out.push('</div>');
  }
  out.push('</section>');

  // Events: the record the timeline's marks come from, readable in print.
  out.push(`<section id="events"><h2>Events (${m.events.length})</h2>`);
  if (m.events.length === 0) out.push('<p class="muted">No event recorded.</p>');
  else {
    out.push('<div class="scroll"><table><thead><tr><th>time</th><th>event</th><th>who</th><th>details</th><th>reason</th></tr></thead><tbody>');
    for (const e of m.events) {
      out.push(`<tr class="event" data-event="${esc(e.event)}"><td>${esc(fmtTime(e.atUs))}</td><td>${esc(e.event)}</td><td>${esc(eventWho(e))}</td><td>${esc(e.details)}</td><td class="reason">${esc(e.reason ?? '')}</td></tr>`);
    }
    out.push('</tbody></table></div>');
  }
  out.push('</section>');

  // Failed runs (recovered ones too), then the steps that ended failed.
  out.push(failedRunsSection(m));
  out.push(deathsSection(m));
  out.push(auditSection(m));
  const LIMIT = 1000;
  out.push(`<section id="failures"><h2>Failed steps (${m.failures.length})</h2>`);
  if (m.failures.length === 0) {
    out.push(`<p class="muted">No step ended failed${m.failedRuns.length ? ` (${esc(m.failedRuns.length)} failed run${m.failedRuns.length === 1 ? '' : 's'} above)` : ''}.</p>`);
  } else {
    out.push('<div class="scroll"><table><thead><tr><th>subcloud</th><th class="num">stage</th><th>failed in</th><th>details</th><th class="num">attempt</th><th>at</th></tr></thead><tbody>');
    for (const f of m.failures.slice(0, LIMIT)) {
      out.push(
        `<tr class="failure"><td>${esc(f.cloud)}</td><td class="num">${f.stage}</td><td><span class="swatch" style="background:${color(f.state)}"></span>${esc(f.state)}</td><td class="reason">${esc(f.details)}</td><td class="num">${f.attempt}</td><td>${esc(fmtTime(f.atUs))}</td></tr>`,
      );
    }
    out.push('</tbody></table></div>');
    if (m.failures.length > LIMIT) {
      out.push(`<p class="muted">and ${m.failures.length - LIMIT} more: <code>dcm strategy-step list --state failed</code></p>`);
    }
  }
  out.push('</section>');

  out.push(attemptsSection(m));

  // Durations.
  out.push('<section id="durations"><h2>Durations per state</h2>');
  if (m.durations.length === 0) out.push('<p class="muted">No operation has run yet.</p>');
  else {
    out.push('<div class="scroll"><table><thead><tr><th>state</th><th class="num">ok runs</th><th class="num">failed</th><th class="num">min</th><th class="num">median</th><th class="num">p90</th><th class="num">max</th><th class="num">mean</th><th>distribution (min → max)</th></tr></thead><tbody>');
    for (const d of m.durations) {
      const c = color(d.state);
      out.push(
        `<tr class="duration"><td><span class="swatch" style="background:${c}"></span>${esc(d.state)}</td><td class="num">${d.count}</td><td class="num">${d.failed}</td><td class="num">${esc(fmtMs(d.minMs))}</td><td class="num">${esc(fmtMs(d.p50Ms))}</td><td class="num">${esc(fmtMs(d.p90Ms))}</td><td class="num">${esc(fmtMs(d.maxMs))}</td><td class="num">${esc(fmtMs(d.meanMs))}</td><td>${histogramSvg(d, c)}</td></tr>`,
      );
    }
    out.push('</tbody></table></div>');
  }
  out.push('</section>');

  // The slowest subclouds.
  if (m.slowest.length) {
    out.push('<section id="slowest"><h2>Slowest subclouds</h2><div class="scroll"><table><thead><tr><th>subcloud</th><th class="num">stage</th><th>state</th><th class="num">first start to last end</th></tr></thead><tbody>');
    for (const x of m.slowest) {
      out.push(`<tr><td>${esc(x.cloud)}</td><td class="num">${x.stage}</td><td>${esc(x.state)}</td><td class="num">${esc(fmtMs(x.ms))}</td></tr>`);
    }
    out.push('</tbody></table></div></section>');
  }

  out.push(`<footer>Made by dcm strategy report at ${esc(fmtTime(generatedAtUs))} UTC. Times are UTC.</footer>`);
  out.push('</main></body></html>\n');
  return out.join('\n');
}
