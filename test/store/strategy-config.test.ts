/**
 * The strategy-config store (dcmanager's sw-update-options): the default row, per-subcloud rows,
 * the cascade with the subcloud, the migration of a file made before the table existed, and the
 * resolution a driver receives (own row, else default row, else built-in defaults).
 */
import { REAL_CLOCK } from '../../src/platform/clock.js';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { openDb, type Db } from '../../src/store/open.js';
import { sitesFileOf } from '../../src/platform/sites-file.js';
import { APPLICATION_ID, MIGRATIONS } from '../../src/store/migrations.js';
import { deleteSubcloud, insertSubclouds } from '../../src/store/subclouds.js';
import {
  deleteDefaultConfig,
  deleteSubcloudConfig,
  getDefaultConfig,
  getSubcloudConfig,
  listSubcloudConfigs,
  subcloudByRef,
  subcloudOptions,
  upsertDefaultConfig,
  upsertSubcloudConfig,
} from '../../src/store/strategy-config.js';
import { BUILTIN_DEFAULTS, ConfigBook, type ConfigOptions } from '../../src/domain/strategy-config.js';
import { tempDir } from '../helpers/cli.js';

const OWN: ConfigOptions = {
  storage_apply_type: 'serial',
  worker_apply_type: 'serial',
  max_parallel_workers: 3,
  alarm_restriction_type: 'strict',
  default_instance_action: 'migrate',
};

describe('strategy-config store', () => {
  let t: ReturnType<typeof tempDir>;
  let db: Db;
  beforeEach(async () => {
    t = tempDir();
    db = (await openDb(t.db, { create: true }))!;
    await insertSubclouds(db, [{ name: 'a', fields: {} }, { name: 'b', fields: {} }, { name: '7', fields: {} }]);
  });
  afterEach(() => {
    db.close();
    t.cleanup();
  });

  test('a new file holds the default row with the built-in defaults and no times', async () => {
    expect(await getDefaultConfig(db)).toEqual({ ...BUILTIN_DEFAULTS, created_at: null, updated_at: null });
  });

  test('default: update in place, delete, then create again with a creation time', async () => {
    await upsertDefaultConfig(db, OWN);
    const updated = (await getDefaultConfig(db))!;
    expect(updated).toMatchObject({ ...OWN, created_at: null });
    expect(updated.updated_at).not.toBeNull();
    await deleteDefaultConfig(db);
    expect(await getDefaultConfig(db)).toBeUndefined();
    await upsertDefaultConfig(db, OWN);
    expect(await getDefaultConfig(db)).toMatchObject({ ...OWN, updated_at: null });
    expect((await getDefaultConfig(db))!.created_at).not.toBeNull();
  });

  test('per subcloud: create, update keeps created_at, list in subcloud order, delete says whether there was a row', async () => {
    await upsertSubcloudConfig(db, 2, OWN);
    await upsertSubcloudConfig(db, 1, { ...OWN, max_parallel_workers: 5 });
    const first = (await getSubcloudConfig(db, 2))!;
    expect(first).toMatchObject({ cloud: 'b', ...OWN, updated_at: null });
    await upsertSubcloudConfig(db, 2, { ...OWN, worker_apply_type: 'parallel' });
    expect(await getSubcloudConfig(db, 2)).toMatchObject({ worker_apply_type: 'parallel', created_at: first.created_at });
    expect((await getSubcloudConfig(db, 2))!.updated_at).not.toBeNull();
    expect((await listSubcloudConfigs(db)).map((r) => r.cloud)).toEqual(['a', 'b']);
    expect(await subcloudOptions(db)).toEqual([
      [1, { ...OWN, max_parallel_workers: 5 }],
      [2, { ...OWN, worker_apply_type: 'parallel' }],
    ]);
    expect(await deleteSubcloudConfig(db, 1)).toBe(true);
    expect(await deleteSubcloudConfig(db, 1)).toBe(false);
    expect(await getSubcloudConfig(db, 1)).toBeUndefined();
  });

  test("a subcloud's row is removed with the subcloud", async () => {
    await upsertSubcloudConfig(db, 2, OWN);
    await deleteSubcloud(db, 2);
    expect(await listSubcloudConfigs(db)).toEqual([]);
  });

  test('a subcloud is named by id (all digits) or by name; digits fall back to a name', async () => {
    expect(await subcloudByRef(db, '2')).toEqual({ id: 2, name: 'b' });
    expect(await subcloudByRef(db, 'a')).toEqual({ id: 1, name: 'a' });
    expect(await subcloudByRef(db, '7')).toEqual({ id: 3, name: '7' });
    expect(await subcloudByRef(db, '3')).toEqual({ id: 3, name: '7' });
    expect(await subcloudByRef(db, 'nosuch')).toBeUndefined();
  });
});

describe('strategy-config migration', () => {
  test('a file of the previous schema gains the tables, the seeded default row, and sim_site.options (in the sites file, since 7 -> 8)', async () => {
    const t = tempDir();
    try {
      const raw = new Database(t.db);
      MIGRATIONS[0](raw, REAL_CLOCK);
      raw.pragma(`application_id = ${APPLICATION_ID}`);
      raw.pragma('user_version = 1');
      raw.prepare("INSERT INTO sim_site (name, campaign, done, vim) VALUES ('a', 'c', 0, 'none')").run();
      raw.close();
      const db = (await openDb(t.db, { create: false }))!;
      try {
        expect(await getDefaultConfig(db)).toEqual({ ...BUILTIN_DEFAULTS, created_at: null, updated_at: null });
        const sites = new Database(sitesFileOf(t.db), { fileMustExist: true });
        expect(sites.prepare("SELECT options FROM sim_site WHERE name = 'a'").pluck().get()).toBeNull();
        sites.close();
      } finally {
        db.close();
      }
    } finally {
      t.cleanup();
    }
  });
});

describe('ConfigBook: what each subcloud receives', () => {
  test("own row, else the default row, else the built-in defaults; only the options, frozen", () => {
    const stored = { ...OWN, worker_apply_type: 'parallel' as const, created_at: 'x', updated_at: null };
    const book = new ConfigBook(stored, [[5, OWN]]);
    expect(book.optionsFor(5)).toEqual(OWN);
    expect(book.optionsFor(6)).toEqual({ ...OWN, worker_apply_type: 'parallel' });
    // Shared by every operation, so no driver can change what the next one receives.
    expect(Object.isFrozen(book.optionsFor(6))).toBe(true);
    expect(book.optionsFor(6).max_parallel_workers).toBe(3);
    expect(new ConfigBook(undefined, []).optionsFor(1)).toEqual({ ...BUILTIN_DEFAULTS });
  });
});
