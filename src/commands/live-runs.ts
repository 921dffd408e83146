/**
 * Runs of the strategy whose processes still live while no orchestrator runs (after a kill -9 of
 * dcm, the runs go on): `strategy abort` leaves them running for the next apply to adopt, `retry`
 * and `delete` refuse (or, with --wait, wait) while one lives. One rule with adoption's (SPEC §7.2):
 * two runs of a subcloud never overlap, whatever command an operator types in between.
 */
import { OperationError } from '../domain/errors.js';
import type { Db } from '../store/open.js';
import { leftRunning, runEnd, unknownRuns, type LeftRunRow } from '../store/runs.js';
import { runIdOf } from '../drivers/exec/run-id.js';
import { liveWorkers } from '../orchestrator/workers.js';
import { liveRunPid, runEndedWithStatus } from '../drivers/exec/liveness.js';
import { getStrategy } from '../store/strategy.js';
import { layoutOf } from '../domain/logs.js';
import { runtimeOf, sharedStore, withReadDb, type Ctx } from './context.js';
import type { ProcessRuntime } from '../platform/runtime.js';
import { isPgUrl } from '../domain/db-url.js';

export interface LiveRun {
  left: LeftRunRow;
  pid: number;
  /** Started on another host (several hosts): nothing here can see it; its host tells how it ends. */
  elsewhere?: string;
  /** Ended while no orchestrator ran, its end recorded and not read yet (endedUnread). */
  ended?: true;
}

/**
 * The strategy's runs left `running` that still go (only the exec driver's runs outlive dcm; the
 * context may say otherwise: `Ctx.runLives`), and on a server those another host started: they may
 * still go there, or have ended there with a result the next apply takes
 * (orchestrator/remote-runs.ts), and are never closed from here as if cut off.
 */
export async function liveRuns(db: Db, strategy: { created_at: string; extra: Record<string, unknown> }, ctx: Ctx): Promise<LiveRun[]> {
  const lives = ctx.runLives ?? (strategy.extra.driver === 'exec' ? execRunLives(strategy, ctx.dbPath) : null);
  if (!lives) return [];
  const out: LiveRun[] = [];
  const here = runtimeOf(ctx).host;
  const shared = sharedStore(ctx);
  for (const left of (await leftRunning(db))) {
    if (shared && left.host !== null && left.host !== here) {
      out.push({ left, pid: left.proc?.pid ?? 0, elsewhere: left.host });
      continue;
    }
    const pid = lives(left);
    if (pid !== null) out.push({ left, pid });
  }
  return out;
}

/**
 * The strategy's runs left `running` on this host whose processes are gone but whose end was
 * recorded (an exit code): nothing runs them any more, and the next apply adopts them and takes
 * that end. An abort with no orchestrator leaves them to it (the strategy stays `aborting`) rather
 * than closing them `interrupted`: a run that ended ok at its site is never recorded as cut off.
 */
export async function endedUnread(db: Db, strategy: { created_at: string; extra: Record<string, unknown> }, ctx: Ctx): Promise<LiveRun[]> {
  const ended = ctx.runEnded ?? (strategy.extra.driver === 'exec' ? execRunEnded(strategy, ctx.dbPath) : null);
  if (!ended) return [];
  const live = new Set((await liveRuns(db, strategy, ctx)).map((l) => l.left.historyId));
  return (await leftRunning(db)).filter((left) => !live.has(left.historyId) && ended(left)).map((left) => ({ left, pid: left.proc?.pid ?? 0, ended: true }));
}

function execRunEnded(strategy: { created_at: string; extra: Record<string, unknown> }, dbPath: string): (left: LeftRunRow) => boolean {
  const logs = layoutOf(strategy, dbPath);
  return (left) => runEndedWithStatus(logs, strategy.created_at, left);
}

/** An exec run lives while a process carries its tag, or its launcher is still starting it. */
function execRunLives(strategy: { created_at: string; extra: Record<string, unknown> }, dbPath: string): (left: LeftRunRow) => number | null {
  const logs = layoutOf(strategy, dbPath);
  return (left) => liveRunPid(logs, strategy.created_at, left);
}

/** `subcloud1 (pre check, pid 123)`, and how many more. */
export function nameLive(live: LiveRun[]): string {
  const shown = live.slice(0, 5).map((l) => `${l.left.cloud} (${l.left.state}, ${l.elsewhere ? `on ${l.elsewhere}` : l.ended ? 'ended' : `pid ${l.pid}`})`);
  return shown.join(', ') + (live.length > 5 ? ` and ${live.length - 5} more` : '');
}

/** What an abort with no orchestrator says of the runs it left to the next apply because they ended unread. */
export function endedWarning(ended: LiveRun[]): string {
  return `ended while no orchestrator ran, left for the next apply to read how: ${nameLive(ended)}; the strategy stays aborting: \`dcm strategy apply\` records their ends and ends the abort`;
}

/** For runs on another host: what to do when that host is gone with its launcher (commands/resolve.ts). */
export function resolveHint(live: LiveRun[]): string {
  const far = live.find((l) => l.elsewhere);
  return far ? `; if ${far.elsewhere} is gone for good, say how its run ended: \`dcm strategy-step resolve ${far.left.cloud} --as ok|failed\`` : '';
}

/** Refuse `verb` while a run lives, naming it and saying what to do instead. */
export function refuseWhileLive(live: LiveRun[], verb: string): void {
  if (!live.length) return;
  throw new OperationError(
    `cannot ${verb} while a run of the strategy is still going: ${nameLive(live)}; ` +
      `wait for it (--wait), let \`dcm strategy apply\` adopt it, or stop it: \`dcm strategy abort --now\`${resolveHint(live)}`,
  );
}

/** `--wait`: until none of the strategy's runs lives (they end by themselves or by their timeout). */
export async function waitForLiveRuns(ctx: Ctx, quiet: boolean): Promise<void> {
  // Not another host's: only an apply takes their ends, and the command then says so.
  const check = async () =>
    await withReadDb(ctx, [] as LiveRun[], async (db) => {
      const s = await getStrategy(db);
      return s ? (await liveRuns(db, s, ctx)).filter((l) => !l.elsewhere) : [];
    });
  let live = await check();
  if (live.length && !quiet) process.stderr.write(`waiting for ${nameLive(live)} to end\n`);
  while (live.length) {
    await new Promise((r) => setTimeout(r, 250));
    live = await check();
  }
}

/**
 * Runs of the strategy whose end is not known (several hosts, `strategy status`): started on a
 * host that has no live worker any more, and whose end its launcher has not written (yet, or ever:
 * the host may be gone with it). A worker that took them over waits for their ends, and holds each
 * as of unknown outcome once it cannot be going by its host's own rules (its timeout and grace):
 * never run again by itself. The operator who knows how one ended says so with `strategy-step
 * resolve`, or runs it again with `strategy retry`. One
 * line each; none on a file (one host, whose runs are seen through their files) or for the sim
 * driver (its runs on a host that is gone run again when taken over).
 */
export async function unknownEnds(db: Db, strategy: { created_at: string; extra: Record<string, unknown> }, rt: Pick<ProcessRuntime, 'procs' | 'host'>): Promise<string[]> {
  if (!isPgUrl(db.name) || strategy.extra.driver !== 'exec') return [];
  const watched = new Set((await liveWorkers(db, rt)).map((w) => w.host));
  const held = await unknownRuns(db);
  const out: string[] = [];
  for (const l of (await leftRunning(db))) {
    if (l.host === null || watched.has(l.host)) continue;
    if (await runEnd(db, runIdOf({ campaign: strategy.created_at, cloud: l.cloud, state: l.state, attempt: l.attempt }))) continue;
    const what = `${l.cloud} (${l.state}, attempt ${l.attempt}, on ${l.host}, no live worker there)`;
    const resolve = `\`dcm strategy-step resolve ${l.cloud} --as ok|failed\``;
    // Held (past its bound, or a state with no timeout): nothing ends the wait but its host or the operator.
    if (held.has(l.historyId)) out.push(`unknown: ${what}: held until its host says how it ended, ${resolve}, or \`dcm strategy retry ${l.cloud}\` to run it again`);
    else out.push(`end unknown: ${what}: waited for; held as of unknown outcome past its timeout and grace, never run again by itself; ${resolve} if you know how it ended`);
  }
  return out;
}
