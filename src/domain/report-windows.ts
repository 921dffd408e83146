/**
 * The window each stage really ran with, over time (pure): the stage's window at create, changed by
 * each `strategy update` the event record holds, cut to the stage's span. The stage row keeps only
 * the last value; a post-mortem needs the one in force at each moment.
 */
import { EVENTS, MAX_PARALLEL_NAME, parseChanges, stageWindowName } from './events.js';
import type { ReportEvent } from './report.js';

/** The window in force from `fromUs` to `toUs`, and the update that set it (null: as created). */
export interface WindowSpan {
  fromUs: number;
  toUs: number;
  window: number;
  setBy: { atUs: number; user: string; host: string } | null;
}

interface Change {
  atUs: number;
  from: number | null;
  to: number | null;
  who: ReportEvent;
}

const asNumber = (text: string) => (/^\d+$/.test(text) ? Number(text) : null);

/** The changes of one value (`stage 2 window`, `max parallel subclouds`) the record holds, in order. */
function changesOf(events: readonly ReportEvent[], name: string): Change[] {
  const out: Change[] = [];
  for (const e of events) {
    if (e.event !== EVENTS.updated) continue;
    for (const c of parseChanges(e.details)) {
      if (c.name === name) out.push({ atUs: e.atUs, from: asNumber(c.from), to: asNumber(c.to), who: e });
    }
  }
  return out;
}

/**
 * Stage `stage`'s windows over [startUs, endUs]. `current` is the stage's window now: the value at
 * create is the first change's old value, or `current` when nothing changed it. A change after the
 * stage's end is not drawn in it: a stage that has ended keeps the window it ran with.
 */
export function stageWindowSpans(events: readonly ReportEvent[], stage: number, current: number, startUs: number, endUs: number): WindowSpan[] {
  const changes = changesOf(events, stageWindowName(stage));
  let window = changes[0]?.from ?? current;
  let setBy: WindowSpan['setBy'] = null;
  const spans: WindowSpan[] = [];
  let from = startUs;
  for (const c of changes) {
    if (c.to === null) continue;
    if (c.atUs <= startUs) {
      window = c.to;
      setBy = { atUs: c.atUs, user: c.who.user, host: c.who.host };
      continue;
    }
    if (c.atUs >= endUs) break;
    if (c.to === window) continue;
    spans.push({ fromUs: from, toUs: c.atUs, window, setBy });
    from = c.atUs;
    window = c.to;
    setBy = { atUs: c.atUs, user: c.who.user, host: c.who.host };
  }
  spans.push({ fromUs: from, toUs: endUs, window, setBy });
  return spans;
}

/** The strategy's max parallel subclouds at create, and each later value with when it was set. */
export function maxParallelHistory(events: readonly ReportEvent[], current: number | null): { atCreate: number | null; changes: { atUs: number; to: number | null; user: string }[] } {
  const changes = changesOf(events, MAX_PARALLEL_NAME);
  return {
    atCreate: changes.length ? changes[0].from : current,
    changes: changes.map((c) => ({ atUs: c.atUs, to: c.to, user: c.who.user })),
  };
}
