/**
 * The report's post-mortem sections, drawn from its model: what was rolled out, every failed run
 * (recovered or not), each site's attempts, and each stage's window over time. Plain tables, so
 * that all of it prints: nothing here is only in a tooltip.
 */
import { esc, fmtTime } from './html-text.js';
import type { ReportModel, StageTimeline } from '../../domain/report.js';
import type { SiteAttempts } from '../../domain/report-runs.js';
import { orchestratorDeaths } from '../../domain/report-deaths.js';
import { maintenanceWaits } from '../../domain/report-waits.js';

/** Rows of a table at most: past it, the page says how to list the rest. */
const ROW_LIMIT = 1000;
/** Up to this many steps every site's attempts are listed; past it, only the sites with a retry or a failed run. */
const ALL_SITES_UP_TO = 500;

function table(head: readonly (string | [string, 'num'])[], rows: readonly string[], cls = ''): string {
  const th = head.map((h) => (Array.isArray(h) ? `<th class="num">${esc(h[0])}</th>` : `<th>${esc(h)}</th>`)).join('');
  return `<div class="scroll"><table${cls ? ` class="${cls}"` : ''}><thead><tr>${th}</tr></thead><tbody>${rows.join('')}</tbody></table></div>`;
}

/** What was rolled out: the type and its options, the subclouds chosen, the driver and its config, the window, when. */
export function rolloutSection(m: ReportModel): string {
  const s = m.strategy;
  const rows: [key: string, label: string, value: string][] = [['type', 'strategy type', esc(s.type)]];
  const options = s.typeOptions ?? [];
  if (options.length === 0) rows.push(['type options', 'type options', 'none']);
  for (const [flag, value] of options) rows.push([`option ${flag}`, esc(flag), esc(value)]);
  const targets = s.targets ?? [];
  rows.push(['subclouds', 'subclouds', targets.length ? targets.map(([k, v]) => `${esc(k)} ${esc(v)}`).join('; ') : 'every eligible subcloud']);
  rows.push(['driver', 'driver', esc(s.driver)]);
  if (s.execConfig) {
    const of = s.execConfig.of === 'file' ? 'of the file as read at create' : 'of the config as stored (this strategy predates the file digest)';
    rows.push(['exec config sha256', 'exec config sha256', `<code>${esc(s.execConfig.sha256)}</code> <span class="muted">${esc(of)}</span>`]);
  }
  rows.push(['subcloud apply type', 'subcloud apply type', esc(s.subcloudApplyType ?? 'per group')]);
  const mp = m.maxParallel;
  const parts = [`${mp.atCreate === null ? 'per group' : mp.atCreate} at create`];
  for (const c of mp.changes) parts.push(`${c.to === null ? 'per group' : c.to} from ${fmtTime(c.atUs)} (strategy update by ${c.user})`);
  rows.push(['max parallel subclouds', 'max parallel subclouds', esc(parts.join('; '))]);
  rows.push(['stop on failure', 'stop on failure', s.stopOnFailure ? 'yes' : 'no']);
  rows.push(['max failures', 'max failures', esc(s.maxFailures ?? 'None')]);
  // Only when a stage has a gate or a budget of its own (README "Stage gates"): one line a stage.
  if (s.stageGates?.length) rows.push(['stage gates', 'stage gates', s.stageGates.map(esc).join('<br>')]);
  for (const [flag, value] of s.createOptions ?? []) rows.push([`create ${flag}`, esc(flag), esc(value)]);
  rows.push(['created', 'created', esc(s.createdAt.slice(0, 19))]);
  const body = rows.map(([key, label, value]) => `<dt>${label}</dt><dd data-key="${esc(key)}">${value}</dd>`).join('');
  return `<section id="rollout"><h2>What was rolled out</h2><dl class="meta">${body}</dl></section>`;
}

/**
 * The orchestrators that died (a kill -9, a lost host), each named with how it was found gone, by
 * whom, and what became of its runs; nothing when none did.
 */
export function deathsSection(m: ReportModel): string {
  const deaths = orchestratorDeaths(m.events);
  if (deaths.length === 0) return '';
  const rows = deaths.map(
    (d) =>
      `<tr class="death"><td>${esc(fmtTime(d.atUs))}</td><td>${esc(d.orchestrator)}</td><td>${esc(d.why)}</td><td>${esc(d.foundBy)}</td><td>${esc(d.runs ?? '—')}</td></tr>`,
  );
  return (
    `<section id="deaths"><h2>Orchestrators that died (${deaths.length})</h2>` +
    '<p class="muted">An orchestrator killed (kill -9), or cut off, writes no end of its own: the next one to take its lock, or its subclouds, found it gone.</p>' +
    table(['found', 'orchestrator', 'how it was known', 'found by', 'its runs'], rows) +
    '</section>'
  );
}

/** Each wait for a group's maintenance window: which, from when until when, and how it ended; nothing when none waited. */
export function waitsSection(m: ReportModel): string {
  const waits = maintenanceWaits(m.events);
  if (waits.length === 0) return '';
  const rows = waits.map((w) => {
    const took = w.untilUs === null ? '—' : `${Math.round((w.untilUs - w.fromUs) / 1e6)} s`;
    return (
      `<tr class="wait" data-group="${esc(w.group)}"><td>${esc(w.group)}</td><td>${esc(w.window)}</td><td>${esc(fmtTime(w.fromUs))}</td>` +
      `<td>${esc(w.untilUs === null ? '—' : fmtTime(w.untilUs))}</td><td class="num">${esc(took)}</td><td>${esc(w.opens)}</td><td>${esc(w.ended)}</td></tr>`
    );
  });
  return (
    `<section id="waits"><h2>Maintenance windows: waits (${waits.length})</h2>` +
    '<p class="muted">A group\'s subclouds start their first state only inside its maintenance window: each time they waited for it, and how the wait ended.</p>' +
    table(['group', 'window', 'waited from', 'until', ['waited', 'num'], 'to open at', 'ended'], rows) +
    '</section>'
  );
}

/** What the audits after each site found; nothing when the strategy does not audit. */
export function auditSection(m: ReportModel): string {
  const findings = m.strategy.auditFindings;
  if (!findings) return '';
  const out = [`<section id="audit"><h2>Audit findings (${findings.length})</h2>`];
  if (findings.length === 0) out.push('<p class="muted">Every site\'s audit after its last state agreed with what the strategy meant to leave it at.</p>');
  else {
    const rows = findings.slice(0, ROW_LIMIT).map(
      (f) =>
        `<tr class="finding ${f.outcome}" data-cloud="${esc(f.cloud)}"><td>${esc(fmtTime(f.atUs))}</td><td>${esc(f.cloud)}</td><td>${esc(f.state)}</td>` +
        `<td class="outcome">${f.outcome === 'failed' ? 'failed the step (--require-audit)' : 'warning: the step completed'}</td><td class="reason">${esc(f.finding)}</td></tr>`,
    );
    out.push(table(['ended', 'subcloud', 'state', 'outcome', 'finding'], rows));
    if (findings.length > ROW_LIMIT) out.push(`<p class="muted">and ${findings.length - ROW_LIMIT} more: <code>dcm strategy-step history</code></p>`);
  }
  out.push('</section>');
  return out.join('');
}

/** `Failed runs (3, 2 recovered by a retry)`: counted by runs, so a recovered failure is never a 0. */
export function failedRunsHeading(m: ReportModel): string {
  const n = m.failedRuns.length;
  const recovered = m.failedRuns.filter((r) => r.recoveredBy !== null).length;
  return n === 0 ? 'Failed runs (0)' : `Failed runs (${n}, ${recovered} recovered by a retry)`;
}

export function failedRunsSection(m: ReportModel): string {
  const out = [`<section id="failed-runs"><h2>${esc(failedRunsHeading(m))}</h2>`];
  if (m.failedRuns.length === 0) out.push('<p class="muted">Every run ended ok.</p>');
  else {
    out.push('<p class="muted">Every run that failed, timed out or was interrupted (by a kill or a stop), in the order they started, and the later run of the same state that recovered it: the config\'s retries, <code>strategy retry</code>, or a resume.</p>');
    const rows = m.failedRuns.slice(0, ROW_LIMIT).map((r) => {
      const recovered = r.recoveredBy
        ? `attempt ${r.recoveredBy.attempt} ok at ${fmtTime(r.recoveredBy.atUs)}`
        : `no: the step is ${r.stepState}`;
      return (
        `<tr class="failed-run ${r.recoveredBy ? 'recovered' : 'unrecovered'}" data-cloud="${esc(r.cloud)}" data-attempt="${r.attempt}">` +
        `<td>${esc(fmtTime(r.finishUs ?? r.startUs))}</td><td>${esc(r.cloud)}</td><td class="num">${r.stage}</td><td>${esc(r.state)}</td>` +
        `<td class="num">${r.attempt}</td><td class="outcome ${esc(r.outcome)}">${esc(r.outcome)}</td><td class="reason">${esc(r.details)}</td><td>${esc(recovered)}</td></tr>`
      );
    });
    out.push(table(['ended', 'subcloud', ['stage', 'num'], 'state', ['attempt', 'num'], 'outcome', 'details', 'recovered'], rows));
    if (m.failedRuns.length > ROW_LIMIT) out.push(`<p class="muted">and ${m.failedRuns.length - ROW_LIMIT} more: <code>dcm strategy-step history</code></p>`);
  }
  out.push('</section>');
  return out.join('');
}

/** A site's runs of one state: `ok` for one run that ended ok, else `2: failed, ok`. */
function attemptsCell(site: SiteAttempts, state: string): string {
  const a = site.states.find((x) => x.state === state);
  if (!a) return '<td class="none">—</td>';
  const text = a.runs === 1 ? a.outcomes[0] : `${a.runs}: ${a.outcomes.join(', ')}`;
  // A deferral (the site did not answer) is not a failure: marked apart, not red.
  const bad = a.outcomes.some((o) => o !== 'ok' && o !== 'running' && o !== 'deferred');
  const deferred = !bad && a.outcomes.includes('deferred');
  return `<td class="${bad ? 'bad' : deferred ? 'deferred' : ''}" data-state="${esc(state)}">${esc(text)}</td>`;
}

export function attemptsSection(m: ReportModel): string {
  const states = m.states.filter((st) => m.attempts.some((a) => a.states.some((x) => x.state === st)));
  const all = m.attempts.length <= ALL_SITES_UP_TO;
  const shown = (all ? m.attempts : m.attempts.filter((a) => a.eventful)).slice(0, ROW_LIMIT);
  const out = ['<section id="attempts"><h2>Attempts per site</h2>'];
  const eventful = m.attempts.filter((a) => a.eventful).length;
  const scope = all ? 'every subcloud' : `the ${eventful} of ${m.attempts.length} subclouds that ran a state more than once or had a run that did not end ok`;
  out.push(`<p class="muted">Per subcloud, its runs of each state and how each ended, in attempt order (${esc(scope)}).</p>`);
  if (shown.length === 0) out.push('<p class="muted">No subcloud ran a state more than once, and every run ended ok.</p>');
  else {
    const rows = shown.map(
      (a) =>
        `<tr class="site" data-cloud="${esc(a.cloud)}"><td>${esc(a.cloud)}</td><td class="num">${a.stage}</td><td>${esc(a.stepState)}</td><td class="num">${a.runs}</td>${states.map((st) => attemptsCell(a, st)).join('')}</tr>`,
    );
    out.push(table(['subcloud', ['stage', 'num'], 'step', ['runs', 'num'], ...states], rows, 'attempts'));
  }
  const hidden = (all ? m.attempts.length : eventful) - shown.length;
  if (hidden > 0) out.push(`<p class="muted">and ${hidden} more: <code>dcm strategy-step history CLOUD</code></p>`);
  out.push('</section>');
  return out.join('');
}

/** The stage's windows in its heading: `window 1 → 2` when an update changed it while it ran. */
export function windowsText(st: StageTimeline): string {
  if (st.windows.length === 0) return `window ${st.window}`;
  return `window ${st.windows.map((w) => w.window).join(' → ')}`;
}

/** The window in force over the stage's span, one row per stretch, with the update that set it. */
export function stageWindowsTable(st: StageTimeline): string {
  if (st.windows.length === 0) return '';
  const rows = st.windows.map(
    (w) =>
      `<tr class="window" data-window="${w.window}"><td>${esc(fmtTime(w.fromUs))}</td><td>${esc(fmtTime(w.toUs))}</td><td class="num">${w.window}</td><td>${
        w.setBy ? esc(`strategy update by ${w.setBy.user}@${w.setBy.host} at ${fmtTime(w.setBy.atUs)}`) : 'as created'
      }</td></tr>`,
  );
  return `<table class="windows"><thead><tr><th>from</th><th>to</th><th class="num">window</th><th>set by</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}
