/**
 * The orchestrators that died, as the report names them (issue 34: a kill -9 of the orchestrator
 * was not named as one). dcm learns of a death only from whoever came next: an apply that took the
 * dead one's lock over (`lock taken over`), or one of several workers that took a silent worker's
 * subclouds (`worker taken over`); the `runs adopted` the next apply wrote says what became of the
 * runs it left. Pure: the event record in, one line per death out.
 */
import { EVENTS } from './events.js';
import type { ReportEvent } from './report.js';

export interface OrchestratorDeath {
  /** When the next orchestrator found it gone (the event's time). */
  atUs: number;
  /** The dead one: `pid P on H`. */
  orchestrator: string;
  /** How it was known to be gone: `no longer running`, `its heartbeat was 12 s old`. */
  why: string;
  /** Who found it: `user@host (pid N)`. */
  foundBy: string;
  /** What became of its runs, when the record says (the next `runs adopted`). */
  runs: string | null;
}

/** The fields of an event record row that tell of a death. */
type Event = Pick<ReportEvent, 'atUs' | 'event' | 'user' | 'host' | 'pid' | 'details'>;

const LOCK = /^took over the apply lock of (pid \d+ on .+?) \((.*)\)$/;
const WORKER = /^(pid \d+ on [^:]+): ([^;]*); (.*)$/;

export function orchestratorDeaths(events: readonly Event[]): OrchestratorDeath[] {
  const out: OrchestratorDeath[] = [];
  events.forEach((e, i) => {
    const foundBy = `${e.user}@${e.host} (pid ${e.pid})`;
    if (e.event === EVENTS.lockTakenOver) {
      const m = LOCK.exec(e.details);
      // The same apply's `runs adopted`, if it wrote one before anything else of its own.
      const next = events.slice(i + 1).find((x) => x.pid === e.pid && x.host === e.host && x.event !== EVENTS.applyStarted);
      out.push({
        atUs: e.atUs,
        orchestrator: m ? m[1] : 'the apply before',
        why: m ? m[2] : e.details,
        foundBy,
        runs: next?.event === EVENTS.runsAdopted ? next.details : null,
      });
    } else if (e.event === EVENTS.workerTakenOver) {
      const m = WORKER.exec(e.details);
      out.push({ atUs: e.atUs, orchestrator: m ? m[1] : 'a worker', why: m ? m[2] : e.details, foundBy, runs: m ? m[3] : null });
    }
  });
  return out;
}
