/**
 * Finishing a run: what the strategy ends as (decided in src/domain/control.ts), written in one
 * fenced transaction, then the closing summary. It gets the history rows of the operations still
 * out (abandoned by a second signal), never the registry itself.
 */
import { endOfRun, exitForState } from '../domain/control.js';
import { STRATEGY_RUNNING } from '../domain/types.js';
import type { Db } from '../store/open.js';
import { failedSteps } from '../store/status.js';
import { casStrategyState, getStrategy, stageWindows, strategyState } from '../store/strategy.js';
import { abortMidStateSteps, countStepStates, failLeftSteps, interruptRuns } from '../store/transitions.js';
import { SUMMARY_FAILURES, type ProgressSink } from './progress.js';
import { applyEndText, auditDisagreesText, EVENTS } from '../domain/events.js';
import { auditWarnings, type AuditWarnings } from '../store/audit-warnings.js';
import type { Actor } from '../platform/who.js';
import { recordEvent } from '../store/events.js';
import type { Clock } from '../platform/clock.js';

export interface RunEnd {
  /** The signal that stopped the run, if one did: the strategy is left as it is (applying, paused). */
  signal: NodeJS.Signals | null;
  aborting: boolean;
  paused: boolean;
  failedSeen: boolean;
  /** History rows of the operations this process stopped waiting for. */
  abandoned: number[];
  clock: Clock;
  /** When the run started: wall-clock (compared with the first start, stored) and monotonic (its length). */
  startedMs: number;
  startedMono: number;
  /** When the strategy's first step started, if before this process (a resume). */
  firstStartedMs?: number;
  peakInFlight: number;
  maxWindow: number;
  /** Who ran the apply: its end goes to the event record in the same transaction. */
  who?: Actor;
  /** One of several workers (workers.ts): the strategy may have been ended by another one already. */
  shared?: boolean;
}

/**
 * Write how the run ended and say it; returns the exit code. `write` is the orchestrator's fenced
 * transaction, retried while the file is busy.
 */
export async function finishRun(db: Db, write: <T>(fn: (tx: Db) => Promise<T>) => Promise<T>, progress: ProgressSink, end: RunEnd): Promise<number> {
  const ending = endOfRun({
    signal: end.signal === null ? null : end.signal === 'SIGTERM' ? 'SIGTERM' : 'SIGINT',
    aborting: end.aborting,
    counts: await countStepStates(db),
    failedSeen: end.failedSeen,
  });
  let final = ending.state;
  let exit = ending.exit;
  let audit: AuditWarnings | undefined;
  const counts = await write(async (tx) => {
    const was = await strategyState(tx) ?? null;
    if (end.shared && final !== null && was !== null && !STRATEGY_RUNNING.includes(was)) {
      // Another worker wrote the end first: this one ends as the strategy did.
      final = was as typeof final;
      if (final === 'complete') audit = await auditWarnings(tx, SUMMARY_FAILURES);
      exit = exitForState(was, audit?.count, await auditOk(tx));
      if (end.who) await recordEvent(tx, end.who, EVENTS.applyEnded, applyEndText(final, 'applying', null, exit));
      return await countStepStates(tx);
    }
    // Operations abandoned by a second signal (or the drain's bound) will run again on resume;
    // until then the history says they were interrupted rather than still running. Only this
    // process's own runs, and only while it holds the lock (the fence).
    if (end.signal) await interruptRuns(tx, end.abandoned, `the orchestrator stopped waiting for it (${end.signal})`);
    // Nothing is in flight: steps put back by a retry and never started again end with the run.
    if (final === 'aborted') await abortMidStateSteps(tx);
    if (final === 'failed') await failLeftSteps(tx, 'not run again: no new subcloud started after the failure budget was spent');
    // Complete, but the site's audit disagreed somewhere: said, recorded (on_event hears it) and
    // its own exit code (issue 49), unless the strategy was created with --audit-disagrees-ok.
    if (final === 'complete') {
      audit = await auditWarnings(tx, SUMMARY_FAILURES);
      exit = exitForState(final, audit.count, await auditOk(tx));
      if (audit.count && end.who) await recordEvent(tx, end.who, EVENTS.auditDisagrees, auditDisagreesText(audit, exit));
    }
    if (final !== null && !await casStrategyState(tx, STRATEGY_RUNNING, final)) {
      throw new Error(`the strategy was changed by another process while applying (it is now ${await strategyState(tx)})`);
    }
    if (end.who) await recordEvent(tx, end.who, EVENTS.applyEnded, applyEndText(final, end.aborting ? 'aborting' : end.paused ? 'paused' : 'applying', end.signal, exit));
    return await countStepStates(tx);
  });
  progress.summary({
    state: final ?? (end.aborting ? 'aborting' : end.paused ? 'paused' : 'applying'),
    counts,
    durationMs: Math.round(end.clock.mono() - end.startedMono),
    ...(end.firstStartedMs !== undefined && end.firstStartedMs < end.startedMs ? { sinceFirstStartMs: end.clock.wall() - end.firstStartedMs } : {}),
    peakInFlight: end.peakInFlight,
    // One of several workers takes a share of each stage's window (issue 34: its closing line said
    // `window 2` of a window of 4): the line gives the stages' window, and the share beside it.
    ...(end.shared
      ? { maxWindow: Math.max(end.maxWindow, ...(await stageWindows(db)).map((w) => w.window)), shareOfWindow: end.maxWindow }
      : { maxWindow: end.maxWindow }),
    ...(await failedSteps(db, SUMMARY_FAILURES)),
    ...(audit?.count ? { auditWarnings: audit, auditOk: await auditOk(db) } : {}),
  });
  return exit;
}

/** `--audit-disagrees-ok`, as stored with the strategy: a complete strategy whose audits disagreed exits 0. */
async function auditOk(db: Db): Promise<boolean> {
  return (await getStrategy(db))?.extra.audit_disagrees_ok === true;
}
