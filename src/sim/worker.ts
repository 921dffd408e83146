/**
 * A thread of the simulator: runs the schedules it is handed, one at a time (each on a virtual
 * clock of its own: loop.ts), and sends each outcome back with a request for the next. Schedules
 * are handed out as threads ask, so that a thread that drew long ones does not keep the others
 * waiting at the end; each outcome depends on its schedule alone.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Schedule } from './schedule.js';
import { runSchedule } from './world.js';

interface Job {
  db?: string;
  trace: boolean;
}

const job = workerData as Job;
parentPort!.on('message', (m: { i: number; schedule: Schedule } | null) => {
  if (m === null) {
    parentPort!.close();
    return;
  }
  void runSchedule(m.schedule, job.db).then((o) => parentPort!.postMessage({ i: m.i, outcome: { ...o, trace: job.trace || o.violations.length ? o.trace : [] } }));
});
parentPort!.postMessage({ ready: true });
