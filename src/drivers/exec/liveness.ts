/**
 * Whether a run left `running` still lives, asked by the commands that change steps while no
 * orchestrator runs (`strategy abort`, `retry`, `delete`): the same rule as adoption, so that no
 * command ever lets a second run of a subcloud start beside a live one (SPEC §7.2).
 */
import { readClaim, readStatus } from './files.js';
import { sameProcessAlive } from './procs.js';
import { processesWithEnv } from '../../platform/proc.js';
import { runBase, type LogLayout } from '../../domain/logs.js';
import type { LeftRun } from '../driver.js';
import { runIdOf } from './run-id.js';

/** The pid to name for a run that still lives (its group leader, or a process of it), else null. */
export function liveRunPid(logs: LogLayout, campaign: string, left: LeftRun): number | null {
  const runId = runIdOf({ campaign, cloud: left.cloud, state: left.state, attempt: left.attempt });
  // Its processes carry its tag; a recorded pid alone may name an unrelated process by now.
  const tagged = processesWithEnv('DCM_RUN_ID', new Set([runId]), left.proc?.procStart ?? 0).get(runId);
  if (tagged?.length) return left.proc && tagged.includes(left.proc.pgid) ? left.proc.pgid : tagged[0];
  const claim = readClaim(runBase(logs, left.cloud, left.attempt, left.state), runId);
  // Claimed by a launcher that is still starting it.
  if (claim && 'launching' in claim && claim.launching > 0 && sameProcessAlive(claim.launching, null)) return claim.launching;
  return null;
}

/**
 * Whether a run whose processes are gone ended with an exit code its wrapper wrote (its status
 * file): the next apply adopts it and takes that end, as it would have had it been running.
 */
export function runEndedWithStatus(logs: LogLayout, campaign: string, left: LeftRun): boolean {
  const runId = runIdOf({ campaign, cloud: left.cloud, state: left.state, attempt: left.attempt });
  const status = readStatus(runBase(logs, left.cloud, left.attempt, left.state), runId);
  return status !== null && 'code' in status;
}
