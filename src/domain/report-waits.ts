/**
 * The waits for maintenance windows, as the report shows them (issue 34: the window, the wait for
 * it and the operator clearing it were absent). Read from the event record: the orchestrator's
 * `maintenance wait` when a group's subclouds start waiting, its `maintenance window open` when the
 * window opens on them, an operator's `group updated` that changed the group's window, and the
 * apply's end (a wait cut short). Pure: events in, one line per wait out.
 */
import { EVENTS } from './events.js';

export interface WindowWaitSpan {
  group: string;
  /** The window as the wait said it: `Sat 22:00-Sun 06:00 (UTC)`. */
  window: string;
  /** When the window was to open (ISO), as said when the wait began. */
  opens: string;
  fromUs: number;
  /** null: still waiting when the record ends. */
  untilUs: number | null;
  /** `the window opened`, `window changed by USER@HOST: …`, `apply ended: …`, `still waiting`. */
  ended: string;
}

interface Event {
  atUs: number;
  event: string;
  user: string;
  host: string;
  details: string;
}

const WAIT = /^group (.+) waits for its maintenance window (.+): opens (\S+)$/;
const OPEN = /^group (.+): maintenance window (.+) is open, its subclouds start$/;

export function maintenanceWaits(events: readonly Event[]): WindowWaitSpan[] {
  const out: WindowWaitSpan[] = [];
  const open = new Map<string, WindowWaitSpan>();
  const close = (w: WindowWaitSpan, atUs: number, ended: string) => {
    w.untilUs = atUs;
    w.ended = ended;
    open.delete(w.group);
  };
  for (const e of events) {
    if (e.event === EVENTS.maintenanceWait) {
      const m = WAIT.exec(e.details);
      if (!m) continue;
      // Several workers each say the same wait: one line for it.
      const same = open.get(m[1]);
      if (same && same.opens === m[3]) continue;
      if (same) close(same, e.atUs, 'waits for another opening');
      const w: WindowWaitSpan = { group: m[1], window: m[2], opens: m[3], fromUs: e.atUs, untilUs: null, ended: 'still waiting' };
      out.push(w);
      open.set(w.group, w);
    } else if (e.event === EVENTS.maintenanceOpen) {
      const m = OPEN.exec(e.details);
      const w = m ? open.get(m[1]) : undefined;
      if (w) close(w, e.atUs, 'the window opened');
    } else if (e.event === EVENTS.groupUpdated && e.details.includes('maintenance window')) {
      for (const w of [...open.values()]) {
        if (e.details.startsWith(`group ${w.group}: `)) close(w, e.atUs, `window changed by ${e.user}@${e.host}: ${e.details.slice(`group ${w.group}: `.length)}`);
      }
    } else if (e.event === EVENTS.applyEnded) {
      for (const w of [...open.values()]) close(w, e.atUs, `apply ended: ${e.details}`);
    }
  }
  return out;
}
