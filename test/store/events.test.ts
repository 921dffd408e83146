/**
 * The event record's table (strategy_event): a file of the schema before it gains it on open,
 * keeping its strategy; rows are written only while a strategy exists, read in the order written,
 * and go with the strategy (ON DELETE CASCADE).
 */
import { REAL_CLOCK } from '../../src/platform/clock.js';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { openDb } from '../../src/store/open.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION } from '../../src/store/migrations.js';
import { listEvents, recordEvent } from '../../src/store/events.js';
import { deleteStrategy, getStrategy, insertStrategy } from '../../src/store/strategy.js';
import { tempDir } from '../helpers/cli.js';

const WHO = { user: 'alice', host: 'h1', pid: 42 };

/** The migration that made the table: the one whose run makes strategy_event appear. */
function eventsMigration(): number {
  const raw = new Database(':memory:');
  try {
    for (let v = 0; v < SCHEMA_VERSION; v++) {
      MIGRATIONS[v](raw, REAL_CLOCK);
      if (raw.prepare("SELECT 1 FROM sqlite_master WHERE name = 'strategy_event'").get()) return v;
    }
    throw new Error('no migration makes strategy_event');
  } finally {
    raw.close();
  }
}

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

describe('strategy_event migration', () => {
  test('a file of the schema before it gains the table on open, its strategy kept, and records from then on', async () => {
    const from = eventsMigration();
    const raw = new Database(t.db);
    for (let v = 0; v < from; v++) MIGRATIONS[v](raw, REAL_CLOCK);
    raw.pragma(`application_id = ${APPLICATION_ID}`);
    raw.pragma(`user_version = ${from}`);
    raw
      .prepare(
        `INSERT INTO strategy (id, type, stop_on_failure, state, extra_args, created_at) VALUES (1, 'patch', 0, 'applying', '{}', '2026-01-01 00:00:00.000000')`,
      )
      .run();
    raw.close();

    const db = (await openDb(t.db, { create: true }))!;
    try {
      expect(await db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      expect((await getStrategy(db))?.state).toBe('applying');
      expect(await listEvents(db)).toEqual([]);
      await recordEvent(db, WHO, 'paused', 'applying -> paused');
      expect(await listEvents(db)).toEqual([expect.objectContaining({ event: 'paused', user: 'alice', host: 'h1', pid: 42, details: 'applying -> paused' })]);
    } finally {
      db.close();
    }
  });
});

describe('the event record', () => {
  test('in the order written; nothing without a strategy; gone with the strategy', async () => {
    const db = (await openDb(t.db, { create: true }))!;
    try {
      await recordEvent(db, WHO, 'paused');
      expect(await db.prepare('SELECT count(*) FROM strategy_event').pluck().get()).toBe(0);
      await insertStrategy(db, { type: 'patch', subcloudApplyType: null, maxParallelSubclouds: null, stopOnFailure: false, extra: {} }, []);
      for (const e of ['apply started', 'paused', 'resumed', 'apply ended']) await recordEvent(db, WHO, e);
      expect((await listEvents(db)).map((e) => e.event)).toEqual(['apply started', 'paused', 'resumed', 'apply ended']);
      await deleteStrategy(db);
      expect(await db.prepare('SELECT count(*) FROM strategy_event').pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  });
});
