/**
 * Where the simulated subclouds keep their side of the update: the sim_site table of the same
 * file, through the simulator's own connection (the driver never sees dcm's store). Writes of one
 * tick are committed together, and an operation is reported finished only once the site's record
 * of it is durable, so that after a kill -9 the site never knows less than the orchestrator.
 */
import Database from 'better-sqlite3';
import type { Site } from './site.js';

export class SiteBook {
  private readonly db: Database.Database;
  private readonly cache = new Map<string, Site>();
  private readonly dirty = new Map<string, Site>();
  private waiters: (() => void)[] = [];
  private scheduled = false;
  private loaded = false;
  private readonly upsert;
  private readonly flushTx;

  constructor(file: string) {
    this.db = new Database(file, { fileMustExist: true });
    this.db.pragma('busy_timeout = 10000');
    this.db.pragma('synchronous = NORMAL');
    this.upsert = this.db.prepare(
      `INSERT INTO sim_site (name, campaign, done, vim, busy_state, busy_owner, options)
       VALUES (@name, @campaign, @done, @vim, @busyState, @busyOwner, @options)
       ON CONFLICT(name) DO UPDATE SET campaign = excluded.campaign, done = excluded.done, vim = excluded.vim,
         busy_state = excluded.busy_state, busy_owner = excluded.busy_owner, options = excluded.options`,
    );
    const tx = this.db.transaction((sites: Site[]) => {
      for (const s of sites) this.upsert.run({ ...s, options: s.options ?? null });
    });
    this.flushTx = (sites: Site[]) => tx.immediate(sites);
  }

  get(name: string): Site | undefined {
    if (!this.loaded) {
      // One read of every site when the first operation arrives.
      type Row = {
        name: string;
        campaign: string;
        done: number;
        vim: string;
        busy_state: string | null;
        busy_owner: string | null;
        options: string | null;
      };
      for (const r of this.db.prepare('SELECT * FROM sim_site').all() as Row[]) {
        this.cache.set(r.name, {
          name: r.name,
          campaign: r.campaign,
          done: r.done,
          vim: r.vim,
          busyState: r.busy_state,
          busyOwner: r.busy_owner,
          options: r.options,
        });
      }
      this.loaded = true;
    }
    return this.cache.get(name);
  }

  /** Record a change now; it is written with the rest of this tick's changes. */
  set(site: Site): void {
    this.cache.set(site.name, site);
    this.dirty.set(site.name, site);
    this.schedule();
  }

  /** Record a change and resolve once it is committed. */
  setDurable(site: Site): Promise<void> {
    this.set(site);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (!this.db.open) return;
    const sites = [...this.dirty.values()];
    const waiters = this.waiters;
    this.dirty.clear();
    this.waiters = [];
    if (sites.length) this.flushTx(sites);
    for (const w of waiters) w();
  }

  close(): void {
    if (this.db.open) {
      if (this.dirty.size) this.flushTx([...this.dirty.values()]);
      this.db.close();
    }
  }
}
