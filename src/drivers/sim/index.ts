/**
 * The `sim` driver: simulated subclouds that take time, fail when told to (or at a seeded rate),
 * and keep their own side of the update, so that a duplicate or out-of-order operation fails on
 * the subcloud exactly as in dcmanager's seed bug. A site labelled `sim_unreachable` does not
 * answer at all (./unreachable.ts): its step is deferred.
 */
import fs from 'node:fs';
import os from 'node:os';
import { sitesFileOf } from '../../platform/sites-file.js';
import { isPgUrl } from '../../domain/db-url.js';
import type { AuditOutcome, AuditRequest, Driver, OperationRequest, OperationResult } from '../driver.js';
import { admit, completed, finish, type Site, type SiteRequest } from './site.js';
import { targetVersion, type AuditReport } from '../../domain/audit.js';
import { ENDPOINTS, TYPES, type Endpoint, type SyncStatus } from '../../domain/types.js';
import { SiteBook } from './sites.js';
import { drawFor } from './random.js';
import { SIM_UNREACHABLE_LABEL, simAuditUnanswered, simUnreachable } from './unreachable.js';
import { setLongTimeout, type Timer } from '../../platform/timers.js';


export interface SimSettings {
  latencyMinMs: number;
  latencyMaxMs: number;
  failRate: number;
  seed: number;
  /** `cloud=state` pairs that fail. */
  fail: Set<string>;
}

export function simSettings(extra: Record<string, unknown>): SimSettings {
  return {
    latencyMinMs: Number(extra.sim_latency_min_ms ?? 200),
    latencyMaxMs: Number(extra.sim_latency_max_ms ?? 1000),
    failRate: Number(extra.sim_fail_rate ?? 0),
    seed: Number(extra.sim_seed ?? 0),
    fail: new Set((extra.sim_fail as string[] | undefined) ?? []),
  };
}

export class SimDriver implements Driver {
  private readonly book: SiteBook;
  /** This process's token: a site busy with this owner is busy for real. */
  private readonly owner = `${os.hostname()}:${process.pid}:${Date.now()}`;
  private readonly timers = new Set<Timer | NodeJS.Immediate>();
  /** The one label it reads: a subcloud without it is never read for its labels. */
  readonly labelKeys = [SIM_UNREACHABLE_LABEL];

  /** `dbFile`: the database the strategy is in; the sites are in their own file beside it. */
  static async open(dbFile: string, settings: SimSettings): Promise<SimDriver> {
    return new SimDriver(await SiteBook.open(isPgUrl(dbFile) ? { pg: dbFile } : { file: sitesFileOf(fs.realpathSync(dbFile)) }), settings);
  }

  private constructor(
    book: SiteBook,
    private readonly settings: SimSettings,
  ) {
    this.book = book;
  }

  async run(req: OperationRequest): Promise<OperationResult> {
    // A site marked unreachable (label sim_unreachable) answers nothing: its step is deferred. Asked
    // at the first state only, where a site that is down is found, so that other states read no labels.
    if (req.stateIndex === 0 && simUnreachable(req.labels)) return { kind: 'defer', reason: `no answer (label ${SIM_UNREACHABLE_LABEL})` };
    const sreq: SiteRequest = req;
    const admission = admit(await this.book.get(req.cloud), sreq, this.owner);
    if (!admission.ok) return { kind: 'failed', reason: admission.reason };
    this.book.set({ ...admission.site, options: this.optionsText(req.options) });

    const draw = drawFor(this.settings.seed, req.cloud, req.state, req.attempt);
    const { latencyMinMs: min, latencyMaxMs: max } = this.settings;
    const latency = min + Math.floor(draw() * (max - min + 1));
    const fails = this.settings.fail.has(`${req.cloud}=${req.state}`) || draw() < this.settings.failRate;
    // After close() this never resolves (its timer is cleared): a closed simulator answers nothing.
    await this.sleep(latency);

    // The site may have been changed meanwhile only by this operation: it is busy.
    const site = (await this.book.get(req.cloud))!;
    const final = req.stateIndex === req.states.length - 1;
    const last = fails || final;
    let after = finish(site, sreq, !fails || admission.replay, admission.replay);
    // The site's side of a completed update, which its audit answers from.
    if (final && (!fails || admission.replay)) after = completed(after, TYPES[req.type].endpoint, targetVersion(req.type, req.extra));
    if (!await this.book.finish(after, this.owner, last)) {
      return { kind: 'failed', reason: 'the subcloud was taken over by another orchestrator' };
    }
    if (fails && !admission.replay) {
      return {
        kind: 'failed',
        reason: this.settings.fail.has(`${req.cloud}=${req.state}`) ? 'injected failure' : 'simulated failure',
      };
    }
    return { kind: 'next' };
  }

  /**
   * A simulated site answers its audit from its own record (what its completed strategies left it
   * at) over what the inventory said of it: every endpoint and its software version. A site the
   * inventory has offline does not answer, as a real one would not.
   */
  async audit(req: AuditRequest): Promise<AuditOutcome> {
    await this.sleep(0);
    const f = req.subcloud;
    if (f.availability === 'offline') return { ok: false, reason: 'audit: the site does not answer (it is offline)' };
    if (simAuditUnanswered(req.labels)) return { ok: false, reason: `audit: the site does not answer (label ${SIM_UNREACHABLE_LABEL})` };
    const site: Site | undefined = await this.book.get(req.cloud);
    const sync: Partial<Record<Endpoint, SyncStatus>> = {};
    for (const e of ENDPOINTS) {
      const own = site?.sync?.[e];
      const listed = f[`${e.replace('-', '_')}_sync_status`];
      const v = own ?? listed;
      if (v) sync[e] = v as SyncStatus;
    }
    const report: AuditReport = { availability: 'online', sync };
    const version = site?.softwareVersion ?? f.software_version;
    if (version) report.software_version = version;
    return { ok: true, report };
  }

  /** Options objects are shared per strategy-config row: their JSON is made once per row. */
  private readonly optionsJson = new WeakMap<object, string>();

  private optionsText(options: Readonly<Record<string, string | number>>): string {
    let text = this.optionsJson.get(options);
    if (text === undefined) {
      text = JSON.stringify(options);
      this.optionsJson.set(options, text);
    }
    return text;
  }

  /**
   * Wait `ms` (a long one in steps, see platform/timers.ts: a huge latency must not become an
   * instant one); no latency at all waits for the next turn of the event loop only.
   */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (ms <= 0) {
        const t = setImmediate(() => {
          this.timers.delete(t);
          resolve();
        });
        this.timers.add(t);
        return;
      }
      const t = setLongTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  async close(): Promise<void> {
    for (const t of this.timers) {
      if ('clear' in t) t.clear();
      else clearImmediate(t);
    }
    this.timers.clear();
    await this.book.close();
  }
}
