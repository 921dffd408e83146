/**
 * The round trips a worker's batch saves on a server (issue 51), on a real one: statements due by
 * the commit go with the COMMIT (Db.atCommit), and the fence is read with the BEGIN
 * (Db.readAtBegin). Each must save its round trip and change nothing of what the transaction
 * does: what is due by the commit is undone with the transaction or the savepoint it was given
 * in, and the read with the BEGIN answers what the transaction's own read would have.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcmOk, tempDir } from '../helpers/cli.js';
import { names } from '../helpers/history.js';
import { SyncPg } from '../helpers/sync-pg.js';
import { PgDatabase } from '../../src/platform/pg-database.js';
import { pgRoundTrips } from '../../src/platform/pg-client.js';
import { PG_STORE } from '../../src/store/pg/schema.js';
import { sqlLiteral } from '../../src/store/statements.js';

let t: ReturnType<typeof tempDir>;
let look: SyncPg;
let db: PgDatabase;

beforeAll(async () => {
  t = tempDir('dcm-trips-');
  look = new SyncPg(t.db);
  look.query('CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT NOT NULL)');
  look.query(`CREATE TABLE dcm_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
  look.query(`INSERT INTO dcm_meta VALUES ('data_version', '0')`);
  db = await PgDatabase.open(t.db, t.db, PG_STORE);
});
afterEach(() => {
  db.readAtBegin('a', null);
  db.readAtBegin('b', null);
  look.query('DELETE FROM note');
});
afterAll(() => {
  db.close();
  look.close();
  t.cleanup();
});

const notes = () => look.query('SELECT id, text FROM note ORDER BY id').rows;

/** `fn`'s round trips to the server. */
async function trips(fn: () => Promise<unknown>): Promise<number> {
  const before = pgRoundTrips();
  await fn();
  return pgRoundTrips() - before;
}

describe('statements due by the commit', () => {
  test('are written by it, in its round trip: one less than a statement of their own', async () => {
    const own = await trips(() => db.transaction((tx) => tx.prepare(`INSERT INTO note VALUES (1, 'own')`).run()).alongside());
    let seenInside: unknown;
    const due = await trips(() =>
      db
        .transaction(async (tx) => {
          await tx.atCommit(`INSERT INTO note VALUES (2, 'due')`);
          // Not run yet: sent with the COMMIT.
          seenInside = await tx.prepare('SELECT count(*)::int AS n FROM note WHERE id = 2').pluck().get();
        })
        .alongside(),
    );
    expect(seenInside).toBe(0);
    expect(notes()).toEqual([
      { id: 1, text: 'own' },
      { id: 2, text: 'due' },
    ]);
    // BEGIN, the read, COMMIT; against BEGIN, the insert, COMMIT.
    expect(due).toBe(own);
    const bare = await trips(() => db.transaction(async (tx) => void (await tx.atCommit(`INSERT INTO note VALUES (3, 'x')`))).alongside());
    expect(bare).toBe(own - 1);
  });

  test('are undone with a transaction that fails, and with a savepoint that fails; kept with one that ends well', async () => {
    await expect(
      db
        .transaction(async (tx) => {
          await tx.atCommit(`INSERT INTO note VALUES (1, 'lost')`);
          throw new Error('the body failed');
        })
        .immediate(),
    ).rejects.toThrow('the body failed');
    expect(notes()).toEqual([]);
    await db
      .transaction(async (tx) => {
        await tx.atCommit(`INSERT INTO note VALUES (1, 'kept')`);
        await expect(
          tx.transaction(async (sp) => {
            await sp.atCommit(`INSERT INTO note VALUES (2, 'undone')`);
            throw new Error('the savepoint failed');
          })(),
        ).rejects.toThrow('the savepoint failed');
        await tx.transaction(async (sp) => void (await sp.atCommit(`INSERT INTO note VALUES (3, 'released')`)))();
      })
      .immediate();
    expect(notes()).toEqual([
      { id: 1, text: 'kept' },
      { id: 3, text: 'released' },
    ]);
  });

  test('one that fails fails the commit: nothing of the transaction is written', async () => {
    await expect(
      db
        .transaction(async (tx) => {
          await tx.prepare(`INSERT INTO note VALUES (1, 'first')`).run();
          await tx.atCommit(`INSERT INTO note VALUES (1, 'the same id')`);
        })
        .alongside(),
    ).rejects.toThrow(/duplicate key/);
    expect(notes()).toEqual([]);
    // The connection goes on.
    await db.transaction((tx) => tx.prepare(`INSERT INTO note VALUES (2, 'after')`).run()).alongside();
    expect(notes()).toEqual([{ id: 2, text: 'after' }]);
  });

  test('text is written as a literal that reads back as it was, whatever quotes and backslashes it holds', async () => {
    const texts = [`it's`, 'back\\slash', `both \\' and ''`, 'E\'x\'', 'plain'];
    await db
      .transaction(async (tx) => {
        for (const [i, text] of texts.entries()) await tx.atCommit(`INSERT INTO note VALUES (${i}, ${sqlLiteral(text)})`);
      })
      .alongside();
    expect(notes().map((r) => (r as { text: string }).text)).toEqual(texts);
    expect([sqlLiteral(NaN), sqlLiteral(Infinity), sqlLiteral('nul\0')]).toEqual([null, null, null]);
  });
});

describe('a read with the BEGIN', () => {
  const READ = 'SELECT text FROM note WHERE id = $1 AND text = $2';

  test('answers the transaction\'s first run of it, in the BEGIN\'s round trip, as the read itself would', async () => {
    look.query(`INSERT INTO note VALUES (7, 'tok')`);
    const read = (tx: Parameters<Parameters<PgDatabase['transaction']>[0]>[0]) => tx.prepare(READ).pluck().get(7, 'tok');
    let plain: unknown;
    const without = await trips(() => db.transaction(async (tx) => void (plain = await read(tx))).alongside());
    db.readAtBegin('a', READ, [7, 'tok']);
    let early: unknown;
    let again: unknown;
    const withIt = await trips(() =>
      db
        .transaction(async (tx) => {
          early = await read(tx);
          // A second run is the transaction's own.
          again = await tx.prepare(READ).get(7, 'tok');
        })
        .alongside(),
    );
    expect([plain, early, again]).toEqual(['tok', 'tok', { text: 'tok' }]);
    expect(withIt).toBe(without);
    const once = await trips(() => db.transaction(async (tx) => void (early = await read(tx))).alongside());
    expect(once).toBe(without - 1);
    expect(early).toBe('tok');
  });

  test('is read at each BEGIN, after the writers\' lock: a row gone since the last transaction is gone from it', async () => {
    look.query(`INSERT INTO note VALUES (7, 'tok')`);
    db.readAtBegin('a', READ, [7, 'tok']);
    const read = () => db.transaction((tx) => tx.prepare(READ).pluck().get(7, 'tok')).immediate();
    expect(await read()).toBe('tok');
    look.query('DELETE FROM note WHERE id = 7');
    expect(await read()).toBeUndefined();
  });

  test('several, under their keys, each answer their own read; a key set again replaces its read', async () => {
    look.query(`INSERT INTO note VALUES (7, 'tok'), (8, 'other')`);
    db.readAtBegin('a', READ, [7, 'tok']);
    db.readAtBegin('b', READ, [8, 'other']);
    db.readAtBegin('b', READ, [8, 'other']);
    const read = (tx: Parameters<Parameters<PgDatabase['transaction']>[0]>[0], id: number, text: string) => tx.prepare(READ).pluck().get(id, text);
    let got: unknown[] = [];
    const n = await trips(() => db.transaction(async (tx) => void (got = [await read(tx, 8, 'other'), await read(tx, 7, 'tok')])).alongside());
    expect(got).toEqual(['other', 'tok']);
    // BEGIN (with both reads) and COMMIT.
    expect(n).toBe(2);
    db.readAtBegin('b', null);
    const m = await trips(() => db.transaction(async (tx) => void (got = [await read(tx, 8, 'other'), await read(tx, 7, 'tok')])).alongside());
    expect(got).toEqual(['other', 'tok']);
    expect(m).toBe(3);
  });

  test('answers only the same statement with the same values; other values are read anew; a read transaction has none', async () => {
    look.query(`INSERT INTO note VALUES (7, 'tok'), (8, 'other')`);
    db.readAtBegin('a', READ, [7, 'tok']);
    const other = await db.transaction((tx) => tx.prepare(READ).pluck().get(8, 'other')).alongside();
    expect(other).toBe('other');
    const n = await trips(() => db.transaction((tx) => tx.prepare(READ).pluck().get(7, 'tok'))());
    // A deferred transaction: BEGIN, the read, COMMIT.
    expect(n).toBe(3);
    // A value with a quote is not trusted to a literal: the transaction reads it itself.
    look.query(`INSERT INTO note VALUES (9, 'it''s')`);
    expect(db.readAtBegin('a', READ, [9, "it's"])).toBe(false);
    let got: unknown;
    const m = await trips(() => db.transaction(async (tx) => void (got = await tx.prepare(READ).pluck().get(9, "it's"))).alongside());
    expect([got, m]).toEqual(["it's", 3]);
  });
});

describe('a worker\'s batches on a server', () => {
  test('add every operation that ended well to the duration statistics, sent with their commits', () => {
    const s = tempDir('dcm-trips-apply-');
    try {
      dcmOk(['--db', s.db, 'subcloud', 'add', ...names(30)]);
      dcmOk(['--db', s.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '0', '--max-parallel-subclouds', '10']);
      const file = path.join(s.dir, 'counters.json');
      dcmOk(['--db', s.db, '-q', 'strategy', 'apply'], { env: { DCM_TEST_HOOKS: '1', DCM_COUNTERS: file } });
      const pg = new SyncPg(s.db);
      try {
        const rows = pg.query('SELECT state, count::int AS count FROM state_duration WHERE type = $1 ORDER BY state', ['patch']).rows as { state: string; count: number }[];
        const ops = pg.query(`SELECT state, count(*)::int AS count FROM step_history WHERE outcome = 'ok' GROUP BY state ORDER BY state`).rows;
        expect(rows).toEqual(ops);
        expect(rows.reduce((n, r) => n + r.count, 0)).toBe(30 * 5);
      } finally {
        pg.close();
      }
      expect(JSON.parse(fs.readFileSync(file, 'utf8')).commits).toBeGreaterThan(0);
    } finally {
      s.cleanup();
    }
  });
});
