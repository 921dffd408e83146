/**
 * A thread of the simulator: runs the schedules it is handed, one at a time (each on its own virtual
 * clock, which is this thread's globals), and sends each outcome back with a request for the next.
 * The simulator hands seeds out as threads ask, so that a thread that drew long schedules does not
 * keep the others waiting at the end; each schedule's outcome depends on its seed alone.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { drawSchedule } from './schedule.js';
import { runSchedule } from './world.js';

interface Job {
  hosts?: number;
  db?: string;
  trace: boolean;
}

const job = workerData as Job;
parentPort!.on('message', (seed: number | null) => {
  if (seed === null) {
    parentPort!.close();
    return;
  }
  void runSchedule(drawSchedule(seed, { hosts: job.hosts, server: job.db !== undefined }), job.db).then((o) =>
    parentPort!.postMessage({ seed, outcome: { ...o, trace: job.trace || o.violations.length ? o.trace : [] } }),
  );
});
parentPort!.postMessage({ ready: true });
