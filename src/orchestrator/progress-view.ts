/**
 * Progress as text: the live view's lines (fitted to a width), the periodic summary line, and the
 * closing summary. Pure functions of a snapshot; the sinks decide when and where they go.
 */
import { formatPerMin } from '../domain/start-rate.js';
import { formatDuration } from '../domain/durations.js';
import { formatSpan, type EstimateSource } from '../domain/estimate.js';
import { STRATEGY_ENDED } from '../domain/types.js';
import { etaWords } from '../domain/status-hold.js';
import type { Snapshot } from './progress-tracker.js';
import { SUMMARY_FAILURES, type Summary } from './progress.js';

/** Where an estimate came from, when it is not this strategy's own durations. */
const FROM: Record<EstimateSource, string> = { observed: '', history: ' (from earlier runs)', sim: ' (from sim latency)', unknown: '' };

/** The ETA part of a line: none once the strategy has ended; while paused, the time it takes once resumed. */
function eta(s: Snapshot): string {
  if (STRATEGY_ENDED.includes(s.state)) return '';
  if (s.etaOf === null) return s.etaMs === null ? ', ETA unknown' : `, ETA ${formatSpan(s.etaMs)}${FROM[s.etaSource]}`;
  // The words `strategy status` says (domain/status-hold.ts etaWords): known waits, the operator's.
  return `, ETA ${etaWords(s.etaOf.eta, s.etaOf.elapsedMs, FROM[s.etaSource])}`;
}

function stageText(s: Snapshot): string {
  if (s.stage === null) return `${s.stages} stage(s)`;
  return `stage ${s.stage} of ${s.stages} (window ${s.window ?? '?'}${s.startRate === null ? '' : `, start rate ${formatPerMin(s.startRate)}`})`;
}

/** In flight: this worker's, and with several workers the others' and how many they are. */
function inFlightText(s: Snapshot): string {
  if (s.workers <= 1) return `${s.inFlight} in flight`;
  return `${s.workers} workers: ${s.inFlight} in flight here, ${s.inFlightElsewhere} elsewhere`;
}

function rate(s: Snapshot): string {
  return `${s.rate >= 10 ? Math.round(s.rate) : s.rate.toFixed(1)}/s`;
}

function countsText(s: Snapshot): string {
  const c = s.counts;
  // Deferred only when there are some: most rollouts never defer a step.
  const deferred = c.deferred ? `, ${c.deferred} deferred` : '';
  return `${c.complete} complete, ${c.failed} failed${deferred}, ${c.aborted} aborted, ${c.inProgress} in progress, ${c.initial} initial`;
}

/** Cut a line to the width (a terminal wraps a line that fills the last column). */
function fit(line: string, width: number): string {
  const max = Math.max(10, width - 1);
  return line.length <= max ? line : `${line.slice(0, max - 3)}...`;
}

/** The live view: a few lines, none wider than `width`. ASCII bar: any terminal, any locale. */
export function liveLines(s: Snapshot, width: number): string[] {
  const pct = s.total ? Math.floor((s.ended * 100) / s.total) : 100;
  const numbers = ` ${s.ended}/${s.total} done ${pct}%`;
  const barWidth = Math.max(10, Math.min(50, width - numbers.length - 3));
  const filled = s.total ? Math.round((s.ended / s.total) * barWidth) : barWidth;
  const lines = [
    `dcm ${s.type} strategy ${s.state}: ${stageText(s)}`,
    `[${'#'.repeat(filled)}${'-'.repeat(barWidth - filled)}]${numbers}`,
    countsText(s),
  ];
  // Always this line, even empty: a frame that never loses lines is redrawn cleanly.
  lines.push(`in progress: ${s.byState.length ? s.byState.map(([state, n]) => `${state} ${n}`).join(', ') : 'none'}`);
  lines.push(`${inFlightText(s)}, ${rate(s)}, elapsed ${formatSpan(s.elapsedMs)}${eta(s)}`);
  if (s.progress.length) {
    lines.push('latest progress:');
    for (const p of s.progress) lines.push(`  ${p.cloud}: ${p.details}`);
  }
  if (s.windowWaits.length) {
    lines.push('waiting for maintenance window:');
    for (const w of s.windowWaits) lines.push(`  ${w}`);
  }
  if (s.failures.length) {
    lines.push('latest failures:');
    for (const f of s.failures) lines.push(`  ${f.cloud}: ${f.details}`);
  }
  return lines.map((l) => fit(l, width));
}

/** One line for a log, every `--progress-interval`. */
export function periodicLine(s: Snapshot): string {
  return (
    `progress: ${stageText(s)}: ${s.ended}/${s.total} done (${countsText(s)}), ` +
    `${inFlightText(s)}, ${rate(s)}, elapsed ${formatSpan(s.elapsedMs)}${eta(s)}`
  );
}

/** The closing summary: counts and duration, then the first failed subclouds and how to list all. */
export function closingSummary(s: Summary): string {
  const order = ['complete', 'failed', 'aborted', 'initial'];
  const parts = [
    ...order.filter((k) => s.counts[k]).map((k) => `${s.counts[k]} ${k}`),
    ...Object.keys(s.counts)
      .filter((k) => !order.includes(k) && s.counts[k])
      .map((k) => `${s.counts[k]} ${k}`),
  ];
  let text =
    `strategy ${s.state}: ${parts.join(', ') || 'no steps'} in ${formatDuration(s.durationMs)}` +
    (s.sinceFirstStartMs === undefined ? '' : ` of this apply, ${formatSpan(s.sinceFirstStartMs)} since the first start`) +
    // An apply that started no subcloud (a worker that joined when every one was taken, a resume
    // with nothing left) had no window of its own: "peak 0, window 0" would read as a window of 0.
    (s.peakInFlight === 0
      ? ' (no subcloud started in this apply)\n'
      : ` (peak ${s.peakInFlight} subclouds in flight, window ${s.maxWindow}${s.shareOfWindow === undefined ? '' : `, this worker's share ${s.shareOfWindow}`})\n`);
  const failures = s.failures ?? [];
  const total = s.failedTotal ?? failures.length;
  if (total > 0 && failures.length) {
    text += `failed subclouds (${total}):\n`;
    for (const f of failures.slice(0, SUMMARY_FAILURES)) text += `  ${f.cloud}: ${f.details}\n`;
    const more = total - Math.min(failures.length, SUMMARY_FAILURES);
    if (more > 0) text += `  ... and ${more} more: dcm strategy-step list --state failed\n`;
  }
  const audit = s.auditWarnings;
  if (audit && audit.count > 0) {
    const exit = s.auditOk ? 'exit 0: --audit-disagrees-ok' : 'exit 5';
    text += `audit disagrees on ${audit.count} complete subcloud(s) (${exit}):\n`;
    for (const f of audit.first.slice(0, SUMMARY_FAILURES)) text += `  ${f.cloud}: ${f.details}\n`;
    const more = audit.count - Math.min(audit.first.length, SUMMARY_FAILURES);
    if (more > 0) text += `  ... and ${more} more: dcm strategy report --html FILE lists them\n`;
  }
  return text;
}

/** The snapshot with the strategy's counts as the store has them (the closing summary's), for the last frame. */
export function withCounts(s: Snapshot, by: Record<string, number>): Snapshot {
  const counts = { initial: 0, inProgress: 0, complete: 0, failed: 0, deferred: 0, aborted: 0 };
  const byState: [string, number][] = [];
  for (const [state, n] of Object.entries(by)) {
    if (state === 'initial' || state === 'complete' || state === 'failed' || state === 'deferred' || state === 'aborted') counts[state] += n;
    else {
      counts.inProgress += n;
      byState.push([state, n]);
    }
  }
  const total = counts.initial + counts.inProgress + counts.complete + counts.failed + counts.deferred + counts.aborted;
  return { ...s, counts, byState, total, ended: counts.complete + counts.failed + counts.aborted };
}
