/**
 * A thread of the simulator: runs the schedules it is handed (each on its own virtual clock, which
 * is this thread's globals) and sends their outcomes back. The simulator splits a run's schedules
 * between as many threads as there are cores; each schedule's outcome depends on its seed alone.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { drawSchedule } from './schedule.js';
import { runSchedule } from './world.js';

interface Job {
  seeds: number[];
  hosts?: number;
  trace: boolean;
}

const job = workerData as Job;
for (const seed of job.seeds) {
  const o = await runSchedule(drawSchedule(seed, { hosts: job.hosts }));
  parentPort!.postMessage({ seed, outcome: { ...o, trace: job.trace || o.violations.length ? o.trace : [] } });
}
