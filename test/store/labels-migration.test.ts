/**
 * Migration 9 -> 10: subclouds get labels, in a table of their own. A file of schema 9 is built by
 * running the migrations of that time on a raw file; a newer file is refused by open.test.ts.
 */
import { REAL_CLOCK } from '../../src/platform/clock.js';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION } from '../../src/store/migrations.js';
import { openDb } from '../../src/store/open.js';
import { changeLabels, labelsOf } from '../../src/store/subclouds.js';
import { deleteSubcloud, findSubcloud, insertSubclouds, listSubclouds } from '../../src/store/subclouds.js';
import { tempDir } from '../helpers/cli.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

function schema9(file: string): void {
  const raw = new Database(file);
  for (const m of MIGRATIONS.slice(0, 9)) m(raw, REAL_CLOCK);
  raw.prepare(`INSERT INTO subcloud (name, group_id, management, availability, deploy_status, patching_sync, usm_sync,
    kubernetes_sync, kube_rootca_sync, firmware_sync, created_at, oam_floating_ip)
    VALUES ('old1', 1, 'managed', 'online', 'complete', 'out-of-sync', 'out-of-sync', 'out-of-sync', 'out-of-sync',
    'out-of-sync', '2025-01-01 00:00:00.000000', '10.0.0.1')`).run();
  raw.pragma(`application_id = ${APPLICATION_ID}`);
  raw.pragma('user_version = 9');
  raw.close();
}

describe('labels: migration 9 -> 10', () => {
  test('a schema-9 file opens at the current schema, its subclouds kept, with no labels', async () => {
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(10);
    schema9(t.db);
    const db = (await openDb(t.db, { create: true }))!;
    try {
      expect(await db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      const old = (await findSubcloud(db, 'old1'))!;
      expect(old.oam_floating_ip).toBe('10.0.0.1');
      expect(old.labels).toBeNull();
      expect(await labelsOf(db, old.id)).toEqual({});
    } finally {
      db.close();
    }
  });

  test('labels are set, changed and removed; they go with their subcloud', async () => {
    const db = (await openDb(t.db, { create: true }))!;
    try {
      await insertSubclouds(db, [{ name: 'a', fields: { labels: { rack: 'r1', port: '22', none: null } } }, { name: 'b', fields: {} }]);
      const a = (await findSubcloud(db, 'a'))!;
      expect(a.labels).toBe('port=22;rack=r1');
      await changeLabels(db, a.id, { rack: 'r2', port: null });
      expect(await labelsOf(db, a.id)).toEqual({ rack: 'r2' });
      expect((await listSubclouds(db)).map((r) => r.labels)).toEqual(['rack=r2', null]);
      await deleteSubcloud(db, a.id);
      expect(await db.prepare('SELECT count(*) FROM subcloud_label').pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  });
});
