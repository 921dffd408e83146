/**
 * A simulated subcloud's own side of an update, judged by the subcloud and not by the
 * orchestrator's bookkeeping (SPEC §7). Pure: a site and a request in, a decision out.
 *
 * The site remembers which states of the current strategy it has completed (`done`, an index), the
 * state of its VIM strategy (none → building → ready-to-apply → applying → applied), and the
 * operation it is running now (`busyState`, owned by `busyOwner`, a process token). An operation
 * that arrives while another runs, or out of order, fails as dcmanager's subclouds did:
 * `unexpected state <vim state>`. An operation left running by a process that died may run again:
 * dcmanager's states are re-entrant.
 */
import { roleOf, type Endpoint, type SyncStatus } from '../../domain/types.js';

export interface Site {
  name: string;
  campaign: string;
  done: number;
  vim: string;
  busyState: string | null;
  busyOwner: string | null;
  /** The strategy-config options (JSON) the site last received, so a test can see them. */
  options?: string | null;
  /**
   * What the site's completed strategies left it at, kept across strategies and answered by its
   * audit: the endpoints they brought in-sync and the software version a sw-deploy installed.
   * Absent: the site is as the inventory describes it.
   */
  softwareVersion?: string | null;
  sync?: Partial<Record<Endpoint, SyncStatus>> | null;
}

export interface SiteRequest {
  cloud: string;
  campaign: string;
  state: string;
  stateIndex: number;
  attempt: number;
}

/** A site a strategy reaches for the first time; what earlier strategies left it at (`was`) stays. */
export function freshSite(name: string, campaign: string, was?: Site): Site {
  // Every field, always: one object shape for every site (see transition.ts's `make`).
  return { name, campaign, done: -1, vim: 'none', busyState: null, busyOwner: null, options: null, softwareVersion: was?.softwareVersion ?? null, sync: was?.sync ?? null };
}

function label(site: Site): string {
  return site.busyState && site.vim === 'none' ? site.busyState : site.vim;
}

export type Admission = { ok: true; site: Site; replay: boolean } | { ok: false; reason: string };

/** May this operation start on this site? `owner` is the token of the calling process. */
export function admit(current: Site | undefined, req: SiteRequest, owner: string): Admission {
  let site = current && current.campaign === req.campaign ? current : freshSite(req.cloud, req.campaign, current);
  // Another operation of this very process is still running on the subcloud: the seed's race.
  if (site.busyState !== null && site.busyOwner === owner) {
    return { ok: false, reason: `unexpected state ${label(site)}` };
  }
  if (site.busyState !== null) {
    // Left running by a process that is gone: the interrupted operation runs again from the top.
    site = { ...site, busyState: null, busyOwner: null, vim: rollbackVim(site) };
  }
  const role = roleOf(req.state);
  if (req.stateIndex <= site.done && req.attempt > 1) {
    // Completed on the subcloud but not recorded by the orchestrator before it died: re-entrant.
    return { ok: true, site: { ...site, busyState: req.state, busyOwner: owner }, replay: true };
  }
  if (req.stateIndex !== site.done + 1) return { ok: false, reason: `unexpected state ${label(site)}` };
  if (role === 'vim-create' && !['none', 'applied'].includes(site.vim)) {
    return { ok: false, reason: `unexpected state ${site.vim}` };
  }
  if (role === 'vim-apply' && site.vim !== 'ready-to-apply') return { ok: false, reason: `unexpected state ${site.vim}` };
  const vim = role === 'vim-create' ? 'building' : role === 'vim-apply' ? 'applying' : site.vim;
  return { ok: true, site: { ...site, vim, busyState: req.state, busyOwner: owner }, replay: false };
}

/** A VIM strategy caught mid-build or mid-apply by a crash is built or applied again. */
function rollbackVim(site: Site): string {
  if (site.vim === 'building') return 'none';
  if (site.vim === 'applying') return 'ready-to-apply';
  return site.vim;
}

/** The operation ended on the site. */
export function finish(site: Site, req: SiteRequest, ok: boolean, replay: boolean): Site {
  const role = roleOf(req.state);
  if (replay) return { ...site, busyState: null, busyOwner: null };
  if (!ok) return { ...site, busyState: null, busyOwner: null, vim: rollbackVim(site) };
  const vim = role === 'vim-create' ? 'ready-to-apply' : role === 'vim-apply' ? 'applied' : site.vim;
  return { ...site, done: req.stateIndex, vim, busyState: null, busyOwner: null };
}

/** The site's last state completed: its endpoint is in-sync, and a sw-deploy's release installed. */
export function completed(site: Site, endpoint: Endpoint | null, target: string | null): Site {
  return {
    ...site,
    sync: endpoint ? { ...(site.sync ?? {}), [endpoint]: 'in-sync' } : (site.sync ?? null),
    softwareVersion: target ?? site.softwareVersion ?? null,
  };
}
