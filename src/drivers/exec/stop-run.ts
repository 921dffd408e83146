/**
 * Stopping a live run's processes, and cleaning what a run that ended left behind: its process
 * group, and every process carrying its DCM_RUN_ID that left the group (`setsid`, double forks;
 * Ansible 2.18 and later starts each worker in a session of its own, so a group kill leaves them
 * going: dcmanager met it, LP 2157935).
 */
import { scanProcesses } from '../../platform/proc.js';
import { terminateGroup, terminatePids, terminateTagged, waitGroupGone } from './procs.js';
import type { TagScans } from './tag-scans.js';

/**
 * How long a finished run's group may take to go by itself (the sh wrapper's `tee` copying the last
 * of stderr).
 */
const DRAIN_MS = 250;

/**
 * A run to stop (timeout, abort now, a second Ctrl-C): its group and whatever of it left the group,
 * all at once: SIGTERM to each, SIGKILL after the grace to those left, found afresh on every look
 * (a process forked meanwhile is found too).
 */
export async function killRun(pgid: number, runId: string, since: number, graceMs: number): Promise<void> {
  const groups = new Set(pgid > 0 ? [pgid] : []);
  const find = () => {
    const found = scanProcesses('DCM_RUN_ID', new Set([runId]), since, groups);
    return [...new Set([...(found.members.get(pgid) ?? []), ...(found.tagged.get(runId) ?? [])])];
  };
  await terminateTagged(find, graceMs);
}

/**
 * Leftovers of a run whose wrapper has exited: its group's other members (the sh wrapper's `tee`
 * still copying the last of stderr gets a moment), then its processes that left the group, found
 * by DCM_RUN_ID.
 */
export async function cleanLeftovers(scans: TagScans, pgid: number, runId: string, since: number, graceMs: number): Promise<void> {
  // One pass (shared with the runs that end in the same turn) tells both; in the usual case the
  // group is gone and nothing carries the tag, and the run costs no other look at /proc.
  const found = await scans.find(runId, since, pgid);
  if (!found.group.length) {
    if (found.tagged.length) await terminatePids(found.tagged, graceMs);
    return;
  }
  if (!(await waitGroupGone(pgid, DRAIN_MS))) await terminateGroup(pgid, graceMs);
  // Looked for afresh: a member may have left the group while it drained.
  const escaped = (await scans.find(runId, since)).tagged;
  if (escaped.length) await terminatePids(escaped, graceMs);
}
