/**
 * Stopping a run that no orchestrator watches (dcm was killed, its runs go on): `strategy abort
 * --now` with no apply running. The run is stopped as a live dcm stops one (SIGTERM to every
 * process carrying its DCM_RUN_ID, in or out of its process group, SIGKILL after its kill grace),
 * then taken for nobody, so that a launch still on its way can never start it afterwards.
 *
 * By the tag only: Ansible 2.18 and later starts each worker in a session of its own (dcmanager met
 * it, LP 2157935), so a signal to the run's group leaves them going; and a pid recorded earlier may
 * name an unrelated process by now.
 */
import { abandonRun, abandonStart, readClaim, readStatus } from './files.js';
import { liveRunPid } from './liveness.js';
import { sameProcessAlive, terminateTagged } from './procs.js';
import { processesWithEnv } from '../../platform/proc.js';
import { sleep } from '../../platform/timers.js';
import { runBase, type LogLayout } from '../../domain/logs.js';
import type { LeftRun } from '../driver.js';
import { runIdOf } from './run-id.js';

/** Stop the run's processes; true when nothing of it is left (and it can never start). */
export async function stopLeftRun(logs: LogLayout, campaign: string, left: LeftRun, graceMs: number): Promise<boolean> {
  const runId = runIdOf({ campaign, cloud: left.cloud, state: left.state, attempt: left.attempt });
  const since = left.proc?.procStart ?? 0;
  const tagged = () => processesWithEnv('DCM_RUN_ID', new Set([runId]), since).get(runId) ?? [];
  const base = runBase(logs, left.cloud, left.attempt, left.state);
  // A launcher still starting it (its claim names it): once it has, the run is tagged.
  for (let i = 0; i < 20; i++) {
    const claim = readClaim(base, runId);
    if (!(claim && 'launching' in claim && claim.launching > 0 && sameProcessAlive(claim.launching, null))) break;
    await sleep(50);
  }
  await terminateTagged(tagged, graceMs);
  if (tagged().length) return false;
  // Taken for nobody: a launch message or a wrapper only now on its way exits without running it.
  abandonRun(base, runId);
  abandonStart(base, runId);
  return true;
}

/**
 * How a run left `running` stands on this host, for `strategy-step resolve` on a file: a process of
 * it lives (`pid`), its wrapper wrote its exit status (the next apply takes it), or nothing of it
 * is left; then it is taken for nobody, so that it can never start after the operator's word.
 */
export function leftRunStanding(logs: LogLayout, campaign: string, left: LeftRun): { pid: number } | { status: string } | { gone: true } {
  const runId = runIdOf({ campaign, cloud: left.cloud, state: left.state, attempt: left.attempt });
  const base = runBase(logs, left.cloud, left.attempt, left.state);
  const pid = liveRunPid(logs, campaign, left);
  if (pid !== null) return { pid };
  const status = readStatus(base, runId);
  if (status) return { status: 'code' in status ? `exit ${status.code}` : `killed by ${status.signal}` };
  abandonRun(base, runId);
  abandonStart(base, runId);
  return { gone: true };
}
