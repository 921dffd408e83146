/**
 * Where the simulated subclouds keep their side of the update: a file of their own beside the
 * database (`<database>.sites`, see platform/sites-file.ts), opened only by this driver, whose
 * schema is the driver's own. A site is the far side of the wire: it shares neither the store's
 * write lock nor its `data_version` (which the orchestrator polls for requests from other shells),
 * and `db check`, `db backup` and the store's migrations never see it. Writes of one tick are
 * committed together, and an operation is reported finished only once the site's record of it is
 * durable, so that after a kill -9 the site never knows less than the orchestrator.
 */
import type DatabaseT from 'better-sqlite3';
import { requireCjs } from '../../platform/cjs.js';
import { WINDOW_PAGE_CACHE } from '../../platform/sqlite-cache.js';
import { PgDatabase } from '../../platform/pg-database.js';
import { SqliteDb } from '../../platform/sqlite-db.js';
import type { Db } from '../../platform/db.js';

// Through require: see platform/cjs.ts.
const Database = requireCjs('better-sqlite3') as typeof DatabaseT;
import type { Site } from './site.js';

/** How long a flush of the sites on a server waits for more sites to go with it (one transaction is round trips). */
const GATHER_MS = 2;

/**
 * The sites' schema (`PRAGMA user_version` 1). The same shape as the table older databases held,
 * which the store's migration 7 → 8 moved into this file (it creates the table the same way when it
 * moves rows before the driver ever ran).
 */
const SITE_COLUMNS = `
    campaign TEXT NOT NULL,
    done INTEGER NOT NULL,
    vim TEXT NOT NULL,
    busy_state TEXT,
    busy_owner TEXT,
    options TEXT,
    software_version TEXT,
    sync TEXT`;
const SCHEMA = `CREATE TABLE IF NOT EXISTS sim_site (name TEXT PRIMARY KEY, ${SITE_COLUMNS});`;
/** 2 added what the site's strategies left it at (software_version, sync: JSON), for its audit. */
const SCHEMA_VERSION = 2;
/**
 * On PostgreSQL the sites are a schema of their own in the store's database (never the store's
 * tables), at the current shape; a later shape adds its step here.
 */
const PG_SCHEMA = `
  CREATE SCHEMA IF NOT EXISTS dcm_sim;
  CREATE TABLE IF NOT EXISTS dcm_sim.sim_site (name TEXT COLLATE "C" PRIMARY KEY, ${SITE_COLUMNS});
`;
/** "SIM1": the advisory lock the sites' schema is made under (the store's is "DCM1"); their flushes take none. */
const SITES_WRITER_LOCK = 0x53494d31;
const UPGRADE_1_TO_2 = `
  ALTER TABLE sim_site ADD COLUMN software_version TEXT;
  ALTER TABLE sim_site ADD COLUMN sync TEXT;
`;


/** A site's row as stored. */
interface SiteRow {
  name: string;
  campaign: string;
  done: number;
  vim: string;
  busy_state: string | null;
  busy_owner: string | null;
  options: string | null;
  software_version: string | null;
  sync: string | null;
}

interface Finish {
  site: Site;
  owner: string;
  /** The subcloud's last operation for now (its last state, or a failure): forget it once written. */
  last: boolean;
  resolve: (kept: boolean) => void;
  reject: (err: Error) => void;
}

/**
 * A site's columns in the order of the upsert's `?`s (name, campaign, done, vim, busy_state,
 * busy_owner, options, software_version, sync), with no undefined or object (better-sqlite3
 * refuses them). Positional: this runs for every simulated operation, and binding by name looks
 * every parameter up on an object, which was a visible part of figure 1's CPU.
 */
function row(s: Site): [string, string, number, string, string | null, string | null, string | null, string | null, string | null] {
  return [s.name, s.campaign, s.done, s.vim, s.busyState, s.busyOwner, s.options ?? null, s.softwareVersion ?? null, syncJson(s)];
}

const syncJson = (s: Site): string | null => (s.sync ? JSON.stringify(s.sync) : null);

/** Sites in their names' order: the order every flush locks their rows in (no two wait in a circle). */
const byName = (a: Site, b: Site): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * On PostgreSQL a tick's writes are one statement over arrays (`unnest`): an upsert of each changed
 * site, and each finish only while the site still runs that owner's operation (RETURNING says which
 * did). node-postgres sends a statement only once the last has answered, so a transaction of its
 * own with a statement per part was four round trips a tick, every one a site's wait (issue 51);
 * one statement is one round trip, and a transaction by itself. A statement changes a row once: a
 * site both changed and finished in the tick (an operation that ended as it began) is written as
 * the two would leave it, its upsert then its finish, which holds when the change made it that
 * owner's (else the finish is refused, as it would be after the upsert). The same writes as the
 * file's. `db` is the connection (not a transaction's handle). The sites finished are looked up by
 * key (their names through an array, which the planner counts as a few rows, as
 * store/pg/transitions.ts does its steps): joined with the tick's rows alone, counted as a hundred,
 * the update read the sites whole, with the plan a connection made while the table was small and
 * kept as it grew (issue 51: 413 of four workers' ticks over 10,000 sites, 18 after, all early).
 */
const WRITE_SITES = `WITH up AS (
    INSERT INTO sim_site (name, campaign, done, vim, busy_state, busy_owner, options, software_version, sync)
    SELECT v.n, v.c, v.d, v.v, v.bs, v.bo, v.o, v.sv, v.sy
    FROM json_to_recordset($1::json) AS v(n text, c text, d integer, v text, bs text, bo text, o text, sv text, sy text)
    ON CONFLICT (name) DO UPDATE SET campaign = excluded.campaign, done = excluded.done, vim = excluded.vim,
      busy_state = excluded.busy_state, busy_owner = excluded.busy_owner, options = excluded.options,
      software_version = excluded.software_version, sync = excluded.sync),
  fin AS (UPDATE sim_site AS s SET campaign = v.c, done = v.d, vim = v.v, busy_state = NULL, busy_owner = NULL,
      software_version = v.sv, sync = v.sy
    FROM json_to_recordset($2::json) AS v(n text, c text, d integer, v text, sv text, sy text, ow text)
    WHERE s.name = ANY (ARRAY(SELECT f.n COLLATE "C" FROM json_to_recordset($2::json) AS f(n text)))
      AND s.name = v.n COLLATE "C" AND s.busy_owner = v.ow
    RETURNING s.name)
SELECT name FROM fin`;

/**
 * The rows of a tick as the JSON its statement reads (json_to_recordset): one JSON.stringify,
 * native, where node-postgres escapes every element of every text array one by one (that
 * escaping was a sixth of a worker's CPU in figure 1's work: issue 51). Short keys: this runs for
 * every simulated operation.
 */
const upsertJson = (s: Site) => ({ n: s.name, c: s.campaign, d: s.done, v: s.vim, bs: s.busyState, bo: s.busyOwner, o: s.options ?? null, sv: s.softwareVersion ?? null, sy: syncJson(s) });
const finishJson = (f: { site: Site; owner: string }) => ({ n: f.site.name, c: f.site.campaign, d: f.site.done, v: f.site.vim, sv: f.site.softwareVersion ?? null, sy: syncJson(f.site), ow: f.owner });

function pgWrites(db: Db): (sites: Site[], finishes: { site: Site; owner: string }[]) => Promise<boolean[]> {
  const write = db.prepare(WRITE_SITES).pluck();
  return async (sites, finishes) => {
    const changed = new Map(sites.map((s) => [s.name, s]));
    // A finish of a site also changed in the tick: its upsert then its finish, as one row; kept
    // only if the change made it that owner's.
    const folded = new Map<string, boolean>();
    for (const f of finishes) {
      const s = changed.get(f.site.name);
      if (!s) continue;
      const kept = s.busyOwner === f.owner;
      folded.set(s.name, kept);
      if (kept) changed.set(s.name, { ...s, campaign: f.site.campaign, done: f.site.done, vim: f.site.vim, busyState: null, busyOwner: null, softwareVersion: f.site.softwareVersion, sync: f.site.sync });
    }
    const rest = finishes.filter((f) => !folded.has(f.site.name));
    const kept = new Set((await write.all(JSON.stringify([...changed.values()].map(upsertJson)), JSON.stringify(rest.map(finishJson)))) as string[]);
    return finishes.map((f) => folded.get(f.site.name) ?? kept.has(f.site.name));
  };
}

/** The sites file, made with its schema when it lacks it (a better-sqlite3 connection, set up as the store's). */
function openFile(file: string): DatabaseT.Database {
  const db = new Database(file);
  try {
    // Only another apply's sim driver writes here (one that took the strategy over): a wait of
    // 5 s, as everywhere in dcm, and a busy flush is kept and retried at a later tick.
    db.pragma('busy_timeout = 5000');
    db.pragma(WINDOW_PAGE_CACHE);
    // WAL + NORMAL, as the database: a commit survives a kill -9 of the process.
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    // The schema is written only when the file lacks it: an apply that takes the strategy over
    // from a frozen one (SIGSTOP, a hung host) may find that one holding this file's write lock,
    // and must wait for it at its first write, not die of it before it starts.
    if ((db.pragma('user_version', { simple: true }) as number) !== SCHEMA_VERSION) {
      db.transaction(() => {
          const version = db.pragma('user_version', { simple: true }) as number;
          if (version > SCHEMA_VERSION) throw new Error(`${file} was written by a newer dcm (sites schema version ${version})`);
          // A file of schema 1 (or a table the store's migration 7 → 8 made in its shape) gains
          // the new columns; a new file gets the whole table.
          const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sim_site'").get() !== undefined;
          const hasSync = hasTable && (db.prepare('PRAGMA table_info(sim_site)').all() as { name: string }[]).some((c) => c.name === 'sync');
          if (hasTable && !hasSync) db.exec(UPGRADE_1_TO_2);
          else db.exec(SCHEMA);
          db.pragma(`user_version = ${SCHEMA_VERSION}`);
        }).immediate();
    }
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

export class SiteBook {
  private readonly cache = new Map<string, Site>();
  private readonly dirty = new Map<string, Site>();
  /** Finishes to write only if the site still runs the operation of `owner`. */
  private readonly finishes = new Map<string, Finish>();
  private scheduled = false;
  /** Sites asked for this tick and not yet read (on a server): one promise each, one read for all. */
  private readonly asked = new Map<string, Promise<Site | undefined>>();
  private askers: { name: string; resolve: (s: Site | undefined) => void; reject: (err: Error) => void }[] = [];
  private readonly selectOne;
  private readonly selectMany;
  private readonly upsert;
  private readonly finishRun;
  private readonly flushTx;

  /** `where`: the sites file (created with its schema when missing), or the store's PostgreSQL database. */
  static async open(where: { file: string } | { pg: string }): Promise<SiteBook> {
    if (!('pg' in where)) return new SiteBook(new SqliteDb(openFile(where.file)), null);
    // Its writers take a lock of their own: a site shares no lock with the store.
    const pg = await PgDatabase.open('the simulated sites', where.pg, { writerLock: SITES_WRITER_LOCK });
    try {
      await pg.busyWait(5000);
      await pg.transaction((tx) => tx.exec(PG_SCHEMA)).immediate();
      // On every connection: the first one may be cut (a server restart) mid-rollout.
      await pg.setSession('SET search_path TO dcm_sim');
    } catch (err) {
      pg.close();
      throw err;
    }
    return new SiteBook(pg, pgWrites(pg));
  }

  private constructor(
    private readonly db: Db,
    private readonly writeMany: ((sites: Site[], finishes: { site: Site; owner: string }[]) => Promise<boolean[]>) | null,
  ) {
    this.selectOne = this.db.prepare('SELECT * FROM sim_site WHERE name = $1');
    // A server's: the sites first needed in one tick (get).
    this.selectMany = writeMany ? this.db.prepare('SELECT * FROM sim_site WHERE name = ANY($1::text[])') : null;
    // The flush's statements, run only inside its transactions.
    this.upsert = this.db.inside.prepare(
      `INSERT INTO sim_site (name, campaign, done, vim, busy_state, busy_owner, options, software_version, sync)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT(name) DO UPDATE SET campaign = excluded.campaign, done = excluded.done, vim = excluded.vim,
         busy_state = excluded.busy_state, busy_owner = excluded.busy_owner, options = excluded.options,
         software_version = excluded.software_version, sync = excluded.sync`,
    );
    // A site taken over by another orchestrator (this one was stopped, and the lock went to
    // another) no longer runs this process's operation: its late finish is refused by the site.
    this.finishRun = this.db.inside.prepare(
      `UPDATE sim_site SET campaign = $1, done = $2, vim = $3, busy_state = NULL, busy_owner = NULL, software_version = $4, sync = $5
       WHERE name = $6 AND busy_owner = $7`,
    );
    const write = async (sites: Site[], finishes: { site: Site; owner: string }[]): Promise<boolean[]> => {
      // Every write first, then what each finish changed; sent together and awaited once (on a
      // file each runs as it is called, in order), as the store's batches are.
      const [, ended] = await Promise.all([
        Promise.all(sites.map((s) => this.upsert.run(...row(s)))),
        Promise.all(finishes.map(({ site: s, owner }) => this.finishRun.run(s.campaign, s.done, s.vim, s.softwareVersion ?? null, syncJson(s), s.name, owner))),
      ]);
      return ended.map((r) => r.changes === 1);
    };
    // On a server, one script of its own (pgWrites); on a file, a transaction.
    const many = this.writeMany;
    this.flushTx = many
      ? (sites: Site[], finishes: { site: Site; owner: string }[] = []) => many(sites, finishes)
      : (sites: Site[], finishes: { site: Site; owner: string }[] = []) => this.db.transaction(async () => write(sites, finishes)).immediate();
  }

  /**
   * The site as the store has it, or as this process last changed it. Read when first needed (on
   * a server, the sites first needed in one tick in one statement: a round trip each was the most
   * of a first state's wait, issue 51) and forgotten once its operation's end is committed (see
   * flush), so that the book holds the sites in flight, not the fleet (SPEC §4: memory follows the
   * window).
   */
  async get(name: string): Promise<Site | undefined> {
    const cached = this.cache.get(name);
    if (cached) return cached;
    if (!this.writeMany) return this.known((await this.selectOne.get(name)) as SiteRow | undefined);
    let asked = this.asked.get(name);
    if (!asked) {
      if (this.asked.size === 0) setImmediate(() => void this.readAsked());
      this.asked.set(name, (asked = new Promise((resolve, reject) => this.askers.push({ name, resolve, reject }))));
    }
    return await asked;
  }

  /** The sites asked for this tick, read together. */
  private async readAsked(): Promise<void> {
    const askers = this.askers;
    this.askers = [];
    this.asked.clear();
    try {
      const rows = (await this.selectMany!.all(askers.map((a) => a.name))) as SiteRow[];
      const byName = new Map(rows.map((r) => [r.name, r]));
      for (const a of askers) a.resolve(this.known(byName.get(a.name)));
    } catch (err) {
      for (const a of askers) a.reject(err as Error);
    }
  }

  /** A site as read, kept, unless this process changed it meanwhile: then as it has it. */
  private known(r: SiteRow | undefined): Site | undefined {
    if (!r) return undefined;
    const cached = this.cache.get(r.name);
    if (cached) return cached;
    const site: Site = {
      name: r.name,
      campaign: r.campaign,
      done: r.done,
      vim: r.vim,
      busyState: r.busy_state,
      busyOwner: r.busy_owner,
      options: r.options,
      softwareVersion: r.software_version,
      sync: r.sync ? (JSON.parse(r.sync) as Site['sync']) : null,
    };
    this.cache.set(r.name, site);
    return site;
  }

  /** Record a change now; it is written with the rest of this tick's changes. */
  set(site: Site): void {
    this.cache.set(site.name, site);
    this.dirty.set(site.name, site);
    this.schedule();
  }

  /**
   * The operation of `owner` ended on the site: resolves once that is committed, with false when
   * the site no longer runs it (another orchestrator took the site over meanwhile).
   */
  finish(site: Site, owner: string, last: boolean): Promise<boolean> {
    this.cache.set(site.name, site);
    return new Promise((resolve, reject) => {
      this.finishes.set(site.name, { site, owner, last, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // On a server, the sites of a few milliseconds go in one transaction (as the store's commits do).
    if (this.writeMany) setTimeout(() => void this.flush(), GATHER_MS);
    else setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    if (!this.db.open) return;
    const sites = [...this.dirty.values()];
    const finishes = [...this.finishes.values()];
    if (this.writeMany) {
      sites.sort(byName);
      finishes.sort((a, b) => byName(a.site, b.site));
    }
    this.dirty.clear();
    this.finishes.clear();
    let kept: boolean[];
    try {
      kept = await this.flushTx(sites, finishes);
    } catch (err) {
      // A busy file: keep everything for the next tick (nothing was committed). Anything else
      // (a full or corrupt file) is the operations' error: the orchestrator stops the apply.
      if ((err as { code?: string }).code === 'SQLITE_BUSY') {
        for (const s of sites) if (!this.dirty.has(s.name)) this.dirty.set(s.name, s);
        for (const f of finishes) this.finishes.set(f.site.name, f);
        setTimeout(() => this.schedule(), 100);
        return;
      }
      for (const f of finishes) f.reject(err as Error);
      return;
    }
    finishes.forEach((f, i) => {
      // The subcloud's last operation, committed, and not changed since: the file has it; read it
      // again when next needed. Kept between the states of one subcloud (one read, not five).
      if (f.last && !this.dirty.has(f.site.name) && !this.finishes.has(f.site.name) && this.cache.get(f.site.name) === f.site) this.cache.delete(f.site.name);
      f.resolve(kept[i]);
    });
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    try {
      if (this.dirty.size) await this.flushTx([...this.dirty.values()]);
    } catch (err) {
      // Still busy after the busy timeout: what is left is operations started and not finished
      // (a finish is always awaited), which the orchestrator runs again as a new attempt; the
      // site, not told they began, takes that attempt as the next state. Anything else is an error.
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    } finally {
      this.db.close();
    }
  }
}
