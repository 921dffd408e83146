/**
 * The sim driver's sites live in their own file beside the database (`<database>.sites`): apply
 * writes them there, the database and its backups never hold them, a database of the previous
 * schema (7, with its sim_site table) opens, migrates and applies, and a sites file held busy by
 * another process is waited for.
 */
import { afterEach, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, dcmOk, tempDir, withSites, withSql } from '../helpers/fleet.js';
import { SCHEMA_VERSION } from '../../src/store/migrations.js';
import { spawnDcm } from '../helpers/history.js';
import { holdWriteLock } from '../helpers/seams.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let t: ReturnType<typeof tempDir>;
afterEach(() => t.cleanup());

const tablesOf = async (db: string) =>
  await withSql(db, async (d) => await d.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);

test('a database of schema 7 (sim_site in it) opens, migrates and applies; the sites are in the sites file only', async () => {
  t = tempDir();
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2', 's3']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
  // Back to schema 7 by hand: 7 -> 8 only dropped sim_site (as migration 0 made it, with 2 -> 3's
  // options column), 8 -> 9 only added step_history.retry_at, 9 -> 10 only created
  // subcloud_label, 10 -> 11 only created strategy_event, 11 -> 12 only added the stage gate
  // columns and subcloud_group_gate, 12 -> 13 only added subcloud_group's maintenance_window and
  // maintenance_tz, 13 -> 14 only added apply_worker, the steps' owner and fence, the runs' host
  // and two indexes, 14 -> 15 only added strategy_event.reason (the table is dropped below), 15 ->
  // 16 only created strategy_archive, 16 -> 17 only created run_claim and run_end, 17 -> 18 only
  // added the start rate's columns, 18 -> 19 only the mid-state index, 19 -> 20 only keyed that
  // index on the generated column mid. Its
  // rows: a subcloud of an earlier campaign that has left the fleet. (A later migration is undone
  // here too: the schema version is checked first.)
  expect(SCHEMA_VERSION).toBe(20);
  await withSql(t.db, async (d) => {
    await d.exec(`DROP INDEX strategy_step_mid_idx;
            ALTER TABLE strategy_step DROP COLUMN mid;
            ALTER TABLE strategy_stage DROP COLUMN start_rate;
            ALTER TABLE strategy_stage DROP COLUMN rate_last_at;
            ALTER TABLE subcloud_group_gate DROP COLUMN start_rate;
            DROP TABLE run_end;
            DROP TABLE run_claim;
            DROP TABLE strategy_archive;
            DROP INDEX step_history_one_running;
            DROP INDEX strategy_step_owner_idx;
            DROP TABLE apply_worker;
            ALTER TABLE strategy_step DROP COLUMN owner;
            ALTER TABLE strategy_step DROP COLUMN fence;
            ALTER TABLE step_history DROP COLUMN host;
            ALTER TABLE subcloud_group DROP COLUMN maintenance_window;
            ALTER TABLE subcloud_group DROP COLUMN maintenance_tz;
            DROP TABLE subcloud_group_gate;
            ${['max_failures', 'gate', 'gate_check', 'gate_state', 'gate_reason', 'gate_at', 'gate_due_at'].map((c) => `ALTER TABLE strategy_stage DROP COLUMN ${c};`).join('\n')}
            DROP TABLE strategy_event;
            DROP TABLE subcloud_label;
            ALTER TABLE step_history DROP COLUMN retry_at;
            CREATE TABLE sim_site (name TEXT PRIMARY KEY, campaign TEXT NOT NULL, done INTEGER NOT NULL,
              vim TEXT NOT NULL, busy_state TEXT, busy_owner TEXT, options TEXT);
            INSERT INTO sim_site VALUES ('gone', 'earlier', 4, 'applied', NULL, NULL, NULL);
            PRAGMA user_version = 7;`);
  });
  const r = dcm(['--db', t.db, '-q', 'strategy', 'apply']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(await tablesOf(t.db)).not.toContain('sim_site');
  const sites = await withSites(t.db, (d) => d.prepare('SELECT name, campaign, vim, busy_state FROM sim_site ORDER BY name').all()) as {
    name: string;
    campaign: string;
    vim: string;
    busy_state: string | null;
  }[];
  expect(sites.map((s) => s.name)).toEqual(['gone', 's1', 's2', 's3']);
  expect(sites[0]).toEqual({ name: 'gone', campaign: 'earlier', vim: 'applied', busy_state: null });
  expect(sites.slice(1).every((s) => s.vim === 'applied' && s.busy_state === null)).toBe(true);
});

test('db check and db backup see the database only; the next strategy starts the sites afresh', async () => {
  t = tempDir();
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
  expect(dcm(['--db', t.db, '-q', 'strategy', 'apply']).code).toBe(0);
  expect(fs.readdirSync(t.dir).sort()).toEqual(expect.arrayContaining(['dcm.db', 'dcm.db.sites']));
  expect(await tablesOf(t.db)).not.toContain('sim_site');
  expect(dcmQuick(['--db', t.db, 'db', 'check']).code).toBe(0);
  const backup = path.join(t.dir, 'copy.db');
  dcmQuickOk(['--db', t.db, 'db', 'backup', backup]);
  expect(await tablesOf(backup)).not.toContain('sim_site');
  expect(fs.existsSync(`${backup}.sites`)).toBe(false);
  // Sites are keyed by the strategy's campaign: a new strategy on the same subclouds applies again.
  dcmQuickOk(['--db', t.db, 'strategy', 'delete']);
  dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's1', 's2', '--sync', 'all=out-of-sync']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
  expect(dcm(['--db', t.db, '-q', 'strategy', 'apply']).code).toBe(0);
});

test('a database reached through a symlink has the sites file of the real one', async () => {
  t = tempDir();
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
  const link = path.join(t.dir, 'link.db');
  fs.symlinkSync(t.db, link);
  expect(dcm(['--db', link, '-q', 'strategy', 'apply']).code).toBe(0);
  expect(fs.existsSync(`${link}.sites`)).toBe(false);
  expect(await withSites(t.db, (d) => d.prepare('SELECT count(*) FROM sim_site').pluck().get())).toBe(1);
});

// An apply that takes a strategy over from a frozen one (SIGSTOP, a hung host) may find that one
// holding the sites file's write lock. It waits for it, as for the database: before, it died at
// start-up after the 5 s busy timeout (`error: database is locked`, exit 1).
test("the sites file's write lock held by another process past the busy timeout: apply waits for it and completes", async () => {
  t = tempDir();
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1', 's2']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', 's1']);
  dcmOk(['--db', t.db, '-q', 'strategy', 'apply']);
  dcmQuickOk(['--db', t.db, 'strategy', 'delete']);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0']);
  const h = holdWriteLock(`${t.db}.sites`, 10_000);
  await h.held;
  const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
  const r = await apply.done;
  // The hold outlived the busy timeout of the apply's start (10 s against 5 s).
  const released = await h.released;
  expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
  expect(await withSites(t.db, (d) => d.prepare('SELECT name, done FROM sim_site ORDER BY name').all())).toEqual([
    { name: 's1', done: 4 },
    { name: 's2', done: 4 },
  ]);
  expect(released).toBeGreaterThan(0);
}, 120_000);
