/**
 * Notifications (issue 34, item 7): an `on_event` command (the exec config's `on_event`, the sim's
 * `strategy create --on-event`) told of what a pager or a chat should hear — a stage held, the
 * strategy failed or complete, a worker taken over — with the event as JSON on stdin.
 *
 * It reads the event record this apply writes (strategy_event, after the rows there when it
 * started), so it needs no hook in the orchestrator: what is recorded is what is told, once each.
 * It must never stop or slow the rollout: each command runs (after the one before, in the record's
 * order) in its own process group with a bounded time, an apply never waits for one but at its
 * end (bounded too), and a command that fails (an exit other than 0, a signal, its time out, no
 * such program) is itself recorded (`notification failed`) and said on stderr. It never touches
 * the registry nor a step.
 */
import { spawn } from 'node:child_process';
import type { Db } from '../store/open.js';
import { eventsAfter, lastEventIdNotBy, recordEvent, type EventRow } from '../store/events.js';
import { isPgUrl } from '../domain/db-url.js';
import { EVENTS } from '../domain/events.js';
import type { Actor } from '../platform/who.js';
import { terminateGroup } from '../drivers/exec/procs.js';
import type { Timer, Timers } from '../platform/timers.js';

/** What the command is told: the kinds a person is paged for. */
export type NoticeKind =
  | 'stage held'
  | 'strategy failed'
  | 'strategy complete'
  | 'strategy aborted'
  | 'worker taken over'
  | 'orchestrator dead'
  | 'abort'
  | 'deferred'
  | 'run unknown'
  | 'audit disagrees';

export interface OnEvent {
  run: string | string[];
  cwd: string;
}

/** How long one command may run before its process group is stopped. */
const NOTIFY_TIMEOUT_MS = 30_000;
/** How often the record is read for new events. */
const POLL_MS = 500;

/** The strategy's on_event command, from its extra args (sim: `on_event`; exec: its config's). */
export function onEventOf(extra: Record<string, unknown>): OnEvent | null {
  if (typeof extra.on_event === 'string') return { run: extra.on_event, cwd: String(extra.on_event_cwd ?? process.cwd()) };
  if (typeof extra.exec_config !== 'string') return null;
  const cfg = JSON.parse(extra.exec_config) as { on_event?: OnEvent };
  return cfg.on_event ?? null;
}

/**
 * The notice an event makes, or null. A gate that holds or pauses a stage is `stage held`; an apply
 * that ended the strategy complete or failed; a worker taken over. An `apply ended` is told only
 * by the process that wrote it and only the first of a strategy's end (several workers each record
 * their end).
 */
export function noticeOf(e: Pick<EventRow, 'event' | 'details'>): NoticeKind | null {
  if (e.event === EVENTS.stageGate) return /^stage \d+: (held|paused)\b/.test(e.details) ? 'stage held' : null;
  if (e.event === EVENTS.applyEnded) {
    if (e.details.startsWith('complete ')) return 'strategy complete';
    if (e.details.startsWith('failed ')) return 'strategy failed';
    if (e.details.startsWith('aborted ')) return 'strategy aborted';
    return null;
  }
  return OTHER_NOTICES[e.event] ?? null;
}

/** Issue 49: a site deferred, an abort, a run held unknown, an orchestrator found dead, an audit that disagrees. */
const OTHER_NOTICES: Record<string, NoticeKind> = {
  [EVENTS.workerTakenOver]: 'worker taken over',
  // The apply lock taken over: the orchestrator that held it is gone (kill -9, a lost host).
  [EVENTS.lockTakenOver]: 'orchestrator dead',
  [EVENTS.orchestratorDead]: 'orchestrator dead',
  [EVENTS.abortRequested]: 'abort',
  [EVENTS.abortNow]: 'abort',
  [EVENTS.deferred]: 'deferred',
  [EVENTS.runUnknown]: 'run unknown',
  [EVENTS.auditDisagrees]: 'audit disagrees',
};

/** An operator's act, recorded by their command: told by the orchestrator that carries it out. */
const OPERATORS: readonly string[] = [EVENTS.abortRequested, EVENTS.abortNow];

export class Notifier {
  private last = 0;
  /** Looks take turns: two at once would tell the same event twice. */
  private looking: Promise<void> = Promise.resolve();
  private timer: Timer | null = null;
  /** The commands told so far, each after the one before (tell never rejects). */
  private telling: Promise<void> = Promise.resolve();
  private endTold = false;

  constructor(
    private readonly db: Db,
    private readonly cmd: OnEvent,
    private readonly strategy: { type: string; created_at: string },
    private readonly who: Actor,
    private readonly say: (text: string) => void,
    private readonly timers: Timers,
  ) {}

  async start(): Promise<this> {
    // Only what this apply sees happen: an earlier apply's events were its to tell; its own start
    // (a lock or a worker taken over as it began) is this one's.
    this.last = await lastEventIdNotBy(this.db, this.who);
    this.timer = this.timers.every(() => void this.scan(), POLL_MS).unref();
    return this;
  }

  /** Read what was recorded since the last look and tell what should be told. Never throws. */
  scan(): Promise<void> {
    this.looking = this.looking.then(() => this.look());
    return this.looking;
  }

  private async look(): Promise<void> {
    let rows: (EventRow & { id: number })[];
    try {
      rows = await eventsAfter(this.db, this.last);
    } catch {
      return; // A busy or closing store: the next look reads them.
    }
    for (const e of rows) {
      this.last = e.id;
      const kind = noticeOf(e);
      if (kind === null) continue;
      // Only this process's own events (each worker tells what it did), and one end per strategy.
      // An operator's abort is told by the one orchestrator of a file that carries it out; on a
      // server each worker would, and the strategy's end (aborted) is told instead.
      const operators = OPERATORS.includes(e.event) && !isPgUrl(this.db.name);
      if (!operators && (e.pid !== this.who.pid || e.host !== this.who.host)) continue;
      if (kind === 'strategy complete' || kind === 'strategy failed' || kind === 'strategy aborted') {
        if (this.endTold) continue;
        this.endTold = true;
      }
      // One after another, in the record's order: a pager reading the audit's disagreement after
      // the strategy's end (two commands racing to append) would read it backwards.
      this.telling = this.telling.then(() => this.tell(kind, e));
    }
  }

  /** The last look, then wait for the commands still to run (each bounded by its timeout). */
  async close(): Promise<void> {
    if (this.timer) this.timer.clear();
    this.timer = null;
    await this.scan();
    await this.telling;
  }

  private async tell(kind: NoticeKind, e: EventRow): Promise<void> {
    const problem = await runOnEvent(this.cmd, noticeText(kind, e, this.strategy), kind, this.timers);
    if (problem === null) return;
    const text = `on_event for ${kind} (${e.at}): ${problem}`;
    this.say(`notification failed: ${text}`);
    try {
      await recordEvent(this.db, this.who, EVENTS.notificationFailed, text);
    } catch {
      // The store is busy or gone: said on stderr already; the rollout goes on.
    }
  }
}

/** What the command reads on its stdin: one line of JSON. */
export function noticeText(kind: NoticeKind, e: EventRow, strategy: { type: string; created_at: string }): string {
  const payload = {
    notice: kind,
    event: e.event,
    at: e.at,
    details: e.details,
    user: e.user,
    host: e.host,
    pid: e.pid,
    reason: e.reason,
    strategy: { type: strategy.type, created_at: strategy.created_at },
  };
  return `${JSON.stringify(payload)}\n`;
}

/** Run the command with `input` on stdin; null when it exited 0, else what went wrong. */
export function runOnEvent(cmd: OnEvent, input: string, kind: string, timers: Timers): Promise<string | null> {
  const argv = typeof cmd.run === 'string' ? ['/bin/sh', '-c', cmd.run] : cmd.run;
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(argv[0], argv.slice(1), {
        cwd: cmd.cwd,
        env: { ...process.env, DCM_EVENT: kind },
        detached: true,
        stdio: ['pipe', 'ignore', 'pipe'],
      });
    } catch (err) {
      resolve((err as Error).message);
      return;
    }
    let err = '';
    let timedOut = false;
    const timer = timers.after(() => {
      timedOut = true;
      if (child.pid !== undefined) void terminateGroup(child.pid, 2000);
    }, NOTIFY_TIMEOUT_MS);
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      err = (err + d).slice(-2048);
    });
    // A command that does not read its stdin must not fail the write (EPIPE).
    child.stdin!.on('error', () => {});
    child.stdin!.end(input);
    child.on('error', (e) => {
      timer.clear();
      resolve(e.message);
    });
    child.on('close', (code, signal) => {
      timer.clear();
      if (timedOut) return resolve(`timed out after ${NOTIFY_TIMEOUT_MS / 1000}s`);
      if (code === 0) return resolve(null);
      const line = err.split('\n').map((l) => l.trim()).filter(Boolean).pop() ?? '';
      resolve(`${code !== null ? `exit ${code}` : `killed by ${signal}`}${line ? `: ${line.slice(0, 200)}` : ''}`);
    });
  });
}
