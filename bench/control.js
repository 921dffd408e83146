/**
 * Figures of issue 9 (operator control during a rollout):
 * - 7w: peak RSS of a zero-latency apply at 10,000 and 100,000 subclouds, window 1,000 (the
 *   orchestrator reads steps a window at a time: memory should follow the window, not the fleet);
 * - 7m: with BENCH_MILLION=1 only (it takes minutes), a 1,000,000-subcloud import, create and apply:
 *   time and peak RSS of each;
 * - 8: how long after `strategy pause`, `resume` and `update` committed the running orchestrator
 *   acted (its note on stderr), median and max over 20 tries each.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { measure } from './lib/proc.js';
import { median, summary } from './lib/stats.js';
import { dcmSetup, preparedStrategy, removeDb, writeFleetCsv } from './lib/fleet.js';

const node = process.execPath;
const MiB = 1024;
const fmtInt = (n) => Math.round(n).toLocaleString('en-US');

/** Microseconds since the epoch of a dcm timestamp (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC). */
function micros(text) {
  const [date, time] = text.split(' ');
  const [hms, frac = '0'] = time.split('.');
  return Date.parse(`${date}T${hms}Z`) * 1000 + Number(frac.padEnd(6, '0').slice(0, 6));
}

export async function windowMemory(ctx) {
  const window = 1000;
  const sizes = [10_000, 100_000];
  const values = [];
  for (const n of sizes) {
    ctx.log(`figure 7w: ${fmtInt(n)} subclouds, patch, sim latency 0, window ${window}`);
    const prepared = preparedStrategy(ctx, ctx.tmp, `mem${n}`, n, ['--sim-latency', '0', '--max-parallel-subclouds', String(window)]);
    const runs = [];
    for (let i = 0; i < Math.max(1, Math.min(3, ctx.reps.apply)); i++) {
      const work = path.join(ctx.tmp, `mem${n}-work.db`);
      removeDb(work);
      fs.copyFileSync(prepared, work);
      const r = await measure(node, [ctx.dcm, '--db', work, 'strategy', 'apply', '-q'], { rss: true, tmp: ctx.tmp, timeoutMs: 900_000 });
      ctx.log(`  dcm strategy apply run ${i + 1}: ${(r.ms / 1000).toFixed(2)} s, ${(r.rssKiB / MiB).toFixed(0)} MiB`);
      runs.push(r);
      removeDb(work);
    }
    removeDb(prepared);
    values.push({ n, rss: runs.map((r) => r.rssKiB / MiB), ms: runs.map((r) => r.ms) });
  }
  return values.map((v) => ({
    id: v.n === 10_000 ? '7w' : '7W',
    figure: `Memory follows the window (${fmtInt(v.n)})`,
    what: `peak RSS of dcm strategy apply -q: ${fmtInt(v.n)} subclouds, patch, sim latency 0, window ${window}`,
    unit: 'MiB',
    value: summary(v.rss, 1),
    target: { of: 'value', max: 150 },
    limit: `apply took ${(median(v.ms) / 1000).toFixed(1)} s; steps are read a window at a time (store/cursor.ts)`,
  }));
}

/** 1,000,000 subclouds: import, create, apply; time and peak RSS of each. One run. */
export async function million(ctx) {
  const n = 1_000_000;
  const window = 1000;
  ctx.log(`figure 7m: ${fmtInt(n)} subclouds: import, create, apply (window ${window}, sim latency 0)`);
  const csv = writeFleetCsv(path.join(ctx.tmp, 'fleet1m.csv'), n);
  const file = path.join(ctx.tmp, 'million.db');
  removeDb(file);
  const steps = [
    ['import', ['subcloud', 'import', csv]],
    ['create', ['strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--max-parallel-subclouds', String(window)]],
    ['apply', ['strategy', 'apply', '-q']],
  ];
  const rows = [];
  for (const [label, args] of steps) {
    const r = await measure(node, [ctx.dcm, '--db', file, ...args], { rss: true, tmp: ctx.tmp, timeoutMs: 3_600_000 });
    ctx.log(`  ${label}: ${(r.ms / 1000).toFixed(1)} s, ${(r.rssKiB / MiB).toFixed(0)} MiB`);
    rows.push({
      id: `7m-${label}`,
      figure: `1,000,000 subclouds: ${label}`,
      what: `dcm ${args.slice(0, 2).join(' ')} over ${fmtInt(n)} subclouds (one run)`,
      unit: 'ms',
      value: summary([r.ms], 1),
      // The table's targets are on the time column; issue 21's target for import and create is
      // their peak RSS (≤ 300 MiB: they stream in batches), said in the limit column.
      target: null,
      limit: `peak RSS ${(r.rssKiB / MiB).toFixed(0)} MiB${label === 'apply' ? '' : `, target ≤ 300 MiB: ${r.rssKiB / MiB <= 300 ? 'met' : 'NOT met'}`}`,
      diagnostics: { rssMiB: r.rssKiB / MiB },
    });
  }
  fs.rmSync(csv, { force: true });
  removeDb(file);
  return rows;
}

/**
 * A long apply in the background; each try runs the command, takes the commit time from the
 * record it prints (updated_at), and waits for the orchestrator's note on stderr.
 */
export async function controlLatency(ctx) {
  const tries = ctx.reps.apply > 1 ? 20 : 5;
  const file = preparedStrategy(ctx, ctx.tmp, 'control', 400, ['--sim-latency', '20s..40s', '--max-parallel-subclouds', '10']);
  ctx.log(`figure 8: pause, resume, update against a running apply (${tries} tries each)`);
  const child = spawn(node, [ctx.dcm, '--db', file, 'strategy', 'apply'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const waiters = [];
  child.stderr.setEncoding('utf8').on('data', (d) => {
    stderr += d;
    const now = Date.now() * 1000 + Number(process.hrtime.bigint() % 1000n);
    for (const w of [...waiters]) {
      if (stderr.indexOf(w.text, w.from) >= 0) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(now);
      }
    }
  });
  const noted = (text, from) =>
    new Promise((resolve, reject) => {
      if (stderr.indexOf(text, from) >= 0) return resolve(Date.now() * 1000);
      const t = setTimeout(() => reject(new Error(`no '${text}' on stderr within 10 s`)), 10_000);
      waiters.push({ text, from, resolve: (v) => (clearTimeout(t), resolve(v)) });
    });
  // A random wait before each command, so that commits do not fall at one phase of the poll.
  const command = async (args) => {
    await new Promise((r) => setTimeout(r, Math.random() * 300));
    return JSON.parse(dcmSetup(ctx, ['--db', file, 'strategy', ...args, '-f', 'json']));
  };
  const lat = { pause: [], resume: [], update: [] };
  try {
    await noted('', 0);
    await new Promise((r) => setTimeout(r, 1000));
    for (let i = 0; i < tries; i++) {
      let from = stderr.length;
      let rec = await command(['pause']);
      lat.pause.push((await noted('dcm: paused:', from)) - micros(rec.updated_at));
      from = stderr.length;
      const w = 11 + (i % 2);
      rec = await command(['update', '--max-parallel-subclouds', String(w)]);
      lat.update.push((await noted(`dcm: window of stage 1: ${w} `, from)) - micros(rec.updated_at));
      from = stderr.length;
      rec = await command(['resume']);
      lat.resume.push((await noted('dcm: resumed', from)) - micros(rec.updated_at));
    }
  } finally {
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    removeDb(file);
  }
  return Object.entries(lat).map(([what, us]) => {
    const ms = us.map((u) => u / 1000);
    return {
      id: `8-${what}`,
      figure: `Noticed after ${what}`,
      what: `from the commit of dcm strategy ${what} to the running orchestrator's note (${tries} tries; poll every 250 ms)`,
      unit: 'ms',
      value: summary(ms, 1),
      max: Math.max(...ms),
      target: { of: 'value', max: 1000 },
      limit: `median ${median(ms).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms: the PRAGMA data_version poll (250 ms) plus the reads it triggers`,
    };
  });
}

/**
 * Figure 9: how fast a running apply acts on a stop that comes from outside it, timed here rather
 * than bounded in the e2e tests (which assert what happens, not how soon): an abort from another
 * shell (commit to the orchestrator's note), the file removed under it and a step changed behind
 * it (the change to the process's exit). A fresh apply of 200 subclouds (window 10, 50..100 ms) per
 * try, each stop after a random 0.5..1 s of running.
 */
export async function stopLatency(ctx) {
  const tries = ctx.reps.apply > 1 ? 10 : 3;
  ctx.log(`figure 9: abort, file removed, step changed behind a running apply (${tries} tries each)`);
  const lat = { abort: [], removed: [], changed: [] };
  for (let i = 0; i < tries; i++) {
    for (const what of Object.keys(lat)) {
      const file = preparedStrategy(ctx, ctx.tmp, `stop-${what}`, 200, ['--sim-latency', '50ms..100ms', '--max-parallel-subclouds', '10']);
      const child = spawn(node, [ctx.dcm, '--db', file, 'strategy', 'apply'], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      let noted = null;
      child.stderr.setEncoding('utf8').on('data', (d) => {
        stderr += d;
        if (noted === null && stderr.includes('dcm: abort requested: ')) noted = Date.now() * 1000;
      });
      const closed = new Promise((r) => child.on('close', () => r(Date.now() * 1000)));
      try {
        await new Promise((r) => setTimeout(r, 500 + Math.random() * 500));
        if (what === 'abort') {
          const at = micros(JSON.parse(dcmSetup(ctx, ['--db', file, 'strategy', 'abort', '-f', 'json'])).updated_at);
          await closed;
          if (noted === null) throw new Error(`figure 9: the abort was never noted: ${stderr.slice(-300)}`);
          lat.abort.push(noted - at);
        } else {
          let at;
          if (what === 'removed') {
            at = Date.now() * 1000;
            fs.rmSync(file);
          } else {
            const d = new Database(file);
            d.prepare("UPDATE strategy_step SET state = 'aborted' WHERE state NOT IN ('initial', 'complete', 'failed', 'aborted') AND id = (SELECT min(id) FROM strategy_step WHERE state NOT IN ('initial', 'complete', 'failed', 'aborted'))").run();
            at = Date.now() * 1000;
            d.close();
          }
          lat[what].push((await closed) - at);
        }
      } finally {
        child.kill('SIGKILL');
        await closed;
        removeDb(file);
      }
    }
  }
  const said = { abort: 'from the commit of dcm strategy abort to the orchestrator\'s note', removed: 'from the file\'s removal to the exit of apply (1)', changed: 'from a step changed by another connection to the exit of apply (1)' };
  return Object.entries(lat).map(([what, us]) => {
    const ms = us.map((u) => u / 1000);
    return {
      id: `9-${what}`,
      figure: what === 'abort' ? 'Noticed after abort' : what === 'removed' ? 'Exit after the file removed' : 'Exit after a step changed behind it',
      what: `${said[what]}: 200 subclouds, window 10, sim 50..100 ms (${tries} tries)`,
      unit: 'ms',
      value: summary(ms, 1),
      max: Math.max(...ms),
      target: { of: 'value', max: what === 'abort' ? 1000 : 5000 },
      limit: `median ${median(ms).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms: ${what === 'abort' ? 'the PRAGMA data_version poll (250 ms)' : what === 'removed' ? "the file check (every 500 ms, with the poll)" : 'the next commit touching the step (its operation\'s end, up to the sim latency)'}`,
    };
  });
}
