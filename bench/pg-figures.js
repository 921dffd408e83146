/**
 * Figure 10 in `npm run bench`: several workers on one strategy on a PostgreSQL server (issue 51),
 * measured by bench/workers.js (figure 1's work with 1, 2 and 4 workers against one orchestrator
 * on a SQLite file, and the latency-bound run with 3 workers against the ideal), all in one run.
 * It needs a server of your own: BENCH_PG_URL, the address of a database the user may create
 * databases from (`node bench/workers.js` says more). Without it the rows say they were skipped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ratio, summary } from './lib/stats.js';

const IDS = [
  ['10-1', 'PostgreSQL, 1 worker vs SQLite'],
  ['10-2', 'PostgreSQL, 2 workers vs 1'],
  ['10-4', 'PostgreSQL, 4 workers vs 2'],
  ['10-lat', 'PostgreSQL, 3 workers, latency-bound makespan'],
];
export const SEVERAL_WORKERS_IDS = IDS;

export async function severalWorkers(ctx) {
  const url = process.env.BENCH_PG_URL;
  if (!url) return IDS.map(([id, figure]) => ({ id, figure, skipped: 'BENCH_PG_URL not set (a PostgreSQL server of your own)', target: null }));
  const reps = ctx.reps.workers ?? 3;
  const out = path.join(ctx.tmp, 'workers.json');
  ctx.log(`figure 10: several workers on PostgreSQL, ${reps} rounds`);
  const r = spawnSync(process.execPath, [path.join(ctx.root, 'bench', 'workers.js'), url, String(reps)], {
    env: { ...process.env, BENCH_ONLY: 'fig1,lat', BENCH_JSON: out },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`bench/workers.js exited ${r.status}`);
  const m = JSON.parse(fs.readFileSync(out, 'utf8'));
  const ms = (k) => m.fig1[k].map((x) => x.ms);
  const work = "figure 1's work: 10,000 subclouds × 5 states, sim latency 0, window 500; workers started together, to the last one's exit";
  const pair = (id, figure, k, base, baseWhat, max, limit) => ({
    id,
    figure,
    what: work,
    baselineWhat: baseWhat,
    unit: 'ms',
    value: summary(ms(k), 1),
    baseline: summary(ms(base), 1),
    ratio: ratio(ms(k), ms(base)),
    target: { of: 'ratio', max },
    limit,
  });
  return [
    pair('10-1', IDS[0][1], '1', 'sqlite', 'one orchestrator on a SQLite file, the same work', 2, 'each commit and each tick of the simulated sites is a round trip to the server; the server and dcm share 2 cores'),
    pair('10-2', IDS[1][1], '2', '1', 'one worker', 1, 'the server and the workers share 2 cores'),
    pair('10-4', IDS[2][1], '4', '2', 'two workers', 1, 'the server and the workers share 2 cores: more workers, more processes'),
    {
      id: '10-lat',
      figure: IDS[3][1],
      what: '2,000 subclouds × 5 states, sim latency 20..60 ms, window 200, 3 workers: makespan over the ideal (the operations recorded, as figure 2 computes it)',
      baselineWhat: 'the ideal',
      unit: 'ms',
      value: summary(m.lat.map((x) => x.makespan), 1),
      baseline: summary(m.lat.map((x) => x.ideal), 1),
      ratio: ratio(m.lat.map((x) => x.makespan), m.lat.map((x) => x.ideal)),
      target: { of: 'ratio', max: 1.15 },
      limit: 'a subcloud freed waits for the commit of its end, then the next one for the commit of its start',
    },
  ];
}
