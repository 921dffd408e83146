/**
 * Figure 2's arithmetic on a recorded step history: the makespan, the ideal it is compared with,
 * and a model of dcmanager's 2022 orchestrator run on the same recorded latencies. Pure.
 */

/** dcm's stored times, `YYYY-MM-DD HH:MM:SS.ffffff` UTC, to epoch milliseconds (µs kept). */
export function parseTime(text) {
  const [date, time] = text.split(' ');
  const [hms, frac = '0'] = time.split('.');
  return Date.parse(`${date}T${hms}Z`) + Number(frac.padEnd(6, '0').slice(0, 6)) / 1000;
}

/**
 * rows: { cloud, stepId, state, started_at, finished_at } in the order the operations started.
 * Returns per-subcloud operation durations (in state order), the makespan, the ideal and the
 * gaps between one operation's end and the next one's start on the same subcloud.
 */
export function analyseHistory(rows, window) {
  const perCloud = new Map();
  let first = Infinity;
  let last = -Infinity;
  let total = 0;
  const gaps = [];
  for (const r of rows) {
    const start = parseTime(r.started_at);
    const end = parseTime(r.finished_at);
    first = Math.min(first, start);
    last = Math.max(last, end);
    total += end - start;
    let c = perCloud.get(r.stepId);
    if (!c) {
      c = { durations: [], lastEnd: null };
      perCloud.set(r.stepId, c);
    }
    if (c.lastEnd !== null) gaps.push(start - c.lastEnd);
    c.durations.push(end - start);
    c.lastEnd = end;
  }
  const clouds = [...perCloud.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c.durations);
  const longest = Math.max(...clouds.map((d) => d.reduce((a, b) => a + b, 0)));
  const makespan = last - first;
  const ideal = Math.max(total / window, longest);
  return { clouds, operations: rows.length, totalOperationMs: total, longestSubcloudMs: longest, makespan, ideal, gaps };
}

/**
 * A model of dcmanager's 2022 orchestrator (SPEC §1): every `scanMs` it scans the steps; a
 * subcloud advances at most one state per scan, at the first scan after its operation finished;
 * subclouds go in batches of `window`, and the next batch starts at the scan that sees the whole
 * batch ended. Takes each subcloud's recorded operation durations (ms, in state order) and
 * returns the makespan it would have, in ms, from the first scan.
 */
export function dcmanagerScanModel(clouds, window, scanMs = 10_000) {
  let batchStart = 0;
  for (let b = 0; b < clouds.length; b += window) {
    let batchEnd = batchStart;
    for (const durations of clouds.slice(b, b + window)) {
      let t = batchStart; // the scan that starts the first state
      for (const d of durations) {
        // The operation started at scan t; the next scan that finds it finished is t + k·scan.
        t += scanMs * Math.max(1, Math.ceil(d / scanMs));
      }
      // t is the scan that sees the last state done: the subcloud is complete there.
      batchEnd = Math.max(batchEnd, t);
    }
    batchStart = batchEnd;
  }
  return batchStart;
}

/**
 * The same sliding window with no orchestration cost at all: subclouds in step order, each one
 * starting the moment a slot frees, its states back to back. What separates this from the ideal
 * is the policy's tail (the last subclouds end one by one while slots stand idle); what separates
 * dcm from this is dcm's own cost.
 */
export function zeroOverheadWindow(clouds, window) {
  const free = new Array(Math.min(window, clouds.length)).fill(0);
  let makespan = 0;
  for (const durations of clouds) {
    let k = 0;
    for (let i = 1; i < free.length; i++) if (free[i] < free[k]) k = i;
    const end = free[k] + durations.reduce((a, b) => a + b, 0);
    free[k] = end;
    makespan = Math.max(makespan, end);
  }
  return makespan;
}

/** Mean number of subclouds in flight (first start to last end) over the makespan. */
export function meanInFlight(rows) {
  const spans = new Map();
  let first = Infinity;
  let last = -Infinity;
  for (const r of rows) {
    const s = parseTime(r.started_at);
    const e = parseTime(r.finished_at);
    first = Math.min(first, s);
    last = Math.max(last, e);
    const span = spans.get(r.stepId);
    if (!span) spans.set(r.stepId, [s, e]);
    else span[1] = Math.max(span[1], e);
  }
  let busy = 0;
  for (const [s, e] of spans.values()) busy += e - s;
  return busy / (last - first);
}
