/**
 * The store on a PostgreSQL server (`--db postgresql://…`), run by the PostgreSQL pass only
 * (jest.pg.config.js): the schema written on the first write and not by a reader, a database that
 * is not dcm's or is newer refused with nothing changed, the password never shown, a server that
 * is not there named in one line, and writers that take turns as SQLite's do.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dcmSpawn, ROOT, tempDir, waitFor } from '../helpers/cli.js';
import { SyncPg } from '../helpers/sync-pg.js';
import { SCHEMA_VERSION } from '../../src/store/migrations.js';
import { openPgDb } from '../../src/store/pg/open.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let t: ReturnType<typeof tempDir>;
let conn: SyncPg;

const tables = () => (conn.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`).rows as { tablename: string }[]).map((r) => r.tablename);

beforeAll(() => {
  t = tempDir();
  conn = new SyncPg(t.db);
});
afterAll(() => {
  conn.close();
  t.cleanup();
});

describe('a dcm database on PostgreSQL', () => {
  test('a reader of an empty database prints the empty result and writes nothing', () => {
    const r = dcmQuick(['--db', t.db, 'subcloud', 'list', '--format', 'json']);
    expect(r.code).toBe(0);
    // dcmanager's empty list: one row of <none>.
    expect(JSON.parse(r.stdout)).toMatchObject([{ name: '<none>' }]);
    expect(tables()).toEqual([]);
  });

  test('the first write makes the schema: marked as dcm\'s, at this version, with the Default group', () => {
    dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'pg1', '--management', 'managed', '--availability', 'online']);
    expect(tables()).toContain('subcloud');
    const meta = conn.query(`SELECT key, value FROM dcm_meta ORDER BY key`).rows;
    expect(meta).toEqual([
      { key: 'application', value: 'dcm' },
      { key: 'data_version', value: expect.stringMatching(/^\d+$/) },
      { key: 'schema_version', value: String(SCHEMA_VERSION) },
    ]);
    const groups = JSON.parse(dcmQuickOk(['--db', t.db, 'subcloud-group', 'list', '--format', 'json']).stdout);
    expect(groups.map((g: { name: string }) => g.name)).toEqual(['Default']);
    // A new group after the seeded one gets the next number, as in a file.
    dcmQuickOk(['--db', t.db, 'subcloud-group', 'add', '--name', 'g2']);
    const again = JSON.parse(dcmQuickOk(['--db', t.db, 'subcloud-group', 'list', '--format', 'json']).stdout);
    expect(again.map((g: { id: number }) => g.id)).toEqual([1, 2]);
  });

  test('a newer schema is refused, and nothing is written', () => {
    conn.query(`UPDATE dcm_meta SET value = $1 WHERE key = 'schema_version'`, [String(SCHEMA_VERSION + 1)]);
    try {
      const r = dcmQuick(['--db', t.db, 'subcloud', 'add', 'pg2']);
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toMatch(new RegExp(`written by a newer dcm \\(schema version ${SCHEMA_VERSION + 1}; this dcm knows up to ${SCHEMA_VERSION}\\)$`));
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(conn.query(`SELECT name FROM subcloud ORDER BY id`).rows).toEqual([{ name: 'pg1' }]);
    } finally {
      conn.query(`UPDATE dcm_meta SET value = $1 WHERE key = 'schema_version'`, [String(SCHEMA_VERSION)]);
    }
  });

  test('writers take turns: one holding the writers\' lock makes another wait, then say the database is busy', () => {
    const other = new SyncPg(t.db);
    try {
      // The lock every dcm writer takes (platform/pg-database.ts), held by another connection
      // (one that is not dcm's, which the server lets sit in its transaction).
      other.query('SET idle_in_transaction_session_timeout = 0');
      other.many([{ text: 'BEGIN' }, { text: 'SELECT pg_advisory_xact_lock($1)', values: [0x44434d31] }]);
      const r = dcmQuick(['--db', t.db, 'subcloud', 'add', 'pg3']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/\(the database is busy\)\n$/);
      other.query('ROLLBACK');
      expect(conn.query(`SELECT count(*) AS n FROM subcloud WHERE name = 'pg3'`).rows).toEqual([{ n: 0 }]);
      dcmQuickOk(['--db', t.db, 'subcloud', 'add', 'pg3']);
    } finally {
      other.close();
    }
  });
});

describe('a statement the server makes wait', () => {
  // The store answers with promises (platform/pg-client.ts). Through a thread that blocked until
  // the server answered, the timer below could not run before the write gave up, busy, 30 s on.
  test('leaves the event loop free: the lock it waits for is let go by a timer of its own process, and then it is had', async () => {
    const holder = (await openPgDb(t.db, { create: false }))!;
    const waiter = (await openPgDb(t.db, { create: false }))!;
    try {
      await waiter.busyWait(30_000);
      let letGo!: () => void;
      const held = new Promise<void>((r) => (letGo = r));
      let holding!: () => void;
      const took = new Promise<void>((r) => (holding = r));
      const holderDone = holder.transaction(async () => {
        holding();
        await held;
      }).immediate();
      await took;
      const order: string[] = [];
      const write = waiter
        .transaction((tx) => tx.prepare(`SELECT count(*) FROM subcloud`).get())
        .immediate()
        .then(() => order.push('written'));
      setTimeout(() => {
        order.push('timer');
        letGo();
      }, 200);
      await Promise.all([write, holderDone]);
      expect(order).toEqual(['timer', 'written']);
    } finally {
      holder.close();
      waiter.close();
    }
  });

  test('a connection left open between statements does not keep a finished process alive', () => {
    // The built store, as a command has it: a read, then nothing more to do, and no close.
    const script = `const { openPgDb } = await import(${JSON.stringify(path.join(ROOT, 'dist/store/pg/open.js'))});
      const db = await openPgDb(process.argv[1], { create: false });
      console.log(await db.prepare('SELECT count(*) FROM subcloud').pluck().get());`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, t.db], { encoding: 'utf8', timeout: 60_000 });
    expect([r.signal, r.status, r.stderr]).toEqual([null, 0, '']);
    expect(Number(r.stdout)).toBeGreaterThan(0);
  });
});

describe('busy_timeout = 0', () => {
  // SQLite's 0 fails a writer at once; PostgreSQL's lock_timeout = 0 would wait without end.
  test('a writer behind another session\'s lock fails busy at once, as on a file, rather than waiting for ever', async () => {
    const other = new SyncPg(t.db);
    const db = (await openPgDb(t.db, { create: false }))!;
    try {
      other.query('SET idle_in_transaction_session_timeout = 0');
      other.many([{ text: 'BEGIN' }, { text: 'SELECT pg_advisory_xact_lock($1)', values: [0x44434d31] }]);
      await db.busyWait(0);
      expect(await db.prepare(`SELECT current_setting('lock_timeout')`).pluck().get()).toBe('1ms');
      let err: unknown = null;
      try {
        await db.transaction((tx) => tx.prepare(`UPDATE subcloud SET description = $1 WHERE name = $2`).run('never', 'pg1')).immediate();
      } catch (e) {
        err = e;
      }
      expect((err as { code?: string }).code).toBe('SQLITE_BUSY');
      other.query('ROLLBACK');
      expect(conn.query(`SELECT count(*) AS n FROM subcloud WHERE description = 'never'`).rows).toEqual([{ n: 0 }]);
    } finally {
      db.close();
      other.close();
    }
  });
});

/**
 * A proxy on a Unix socket in front of the server (argv: its folder, the server's socket, the
 * port). Once, after the client has sent 'kept', it passes the client's COMMIT on, waits for the
 * server's answer that the COMMIT is done, and drops the connection instead of passing that answer
 * back: the commit is made and the client never hears of it. Prints 'ready', then 'cut'.
 */
const DROP_COMMIT_ANSWER = `
const net = require('node:net');
const [dir, server, port] = process.argv.slice(1);
let armed = false, cut = false;
net.createServer((client) => {
  const up = net.connect(server);
  let commitSent = false;
  client.on('data', (b) => {
    if (!cut && b.includes('kept')) armed = true;
    if (!cut && armed && b.includes('COMMIT')) commitSent = true;
    up.write(b);
  });
  up.on('data', (b) => {
    if (commitSent && !cut && b.includes('COMMIT\\0')) {
      cut = true;
      process.stdout.write('cut\\n');
      client.destroy();
      up.destroy();
      return;
    }
    client.write(b);
  });
  client.on('error', () => up.destroy());
  up.on('error', () => client.destroy());
  client.on('close', () => up.destroy());
  up.on('close', () => client.destroy());
}).listen(dir + '/.s.PGSQL.' + port, () => process.stdout.write('ready\\n'));
`;

describe('a lost connection', () => {
  test('cut during a COMMIT the server made: the server is asked on a new connection, and the transaction counts as committed, not as busy', async () => {
    // The pass's addresses name the server's socket folder and port (test/pg/global-setup.ts).
    const param = (k: string) => decodeURIComponent(new RegExp(`[?&]${k}=([^&]+)`).exec(t.db)![1]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-proxy-'));
    const proxy = spawn(process.execPath, ['-e', DROP_COMMIT_ANSWER, dir, `${param('host')}/.s.PGSQL.${param('port')}`, param('port')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let said = '';
    proxy.stdout.on('data', (b: Buffer) => (said += b.toString()));
    try {
      await waitFor(() => said.includes('ready'), 10_000, 20);
      const db = (await openPgDb(t.db.replace(/([?&]host=)[^&]+/, `$1${encodeURIComponent(dir)}`), { create: false }))!;
      try {
        const read = await db
          .transaction(async (tx) => {
            await tx.prepare(`UPDATE subcloud SET description = $1 WHERE name = $2`).run('kept', 'pg1');
            return await tx.prepare(`SELECT description FROM subcloud WHERE name = $1`).pluck().get('pg1');
          })
          .immediate();
        expect(read).toBe('kept');
        // The proxy says so on its pipe, read once the event loop turns.
        await waitFor(() => said.includes('cut'), 10_000, 20);
        expect(conn.query(`SELECT description FROM subcloud WHERE name = 'pg1'`).rows).toEqual([{ description: 'kept' }]);
        // The new connection serves what comes next.
        expect(await db.prepare('SELECT 1').pluck().get()).toBe(1);
      } finally {
        db.close();
      }
    } finally {
      proxy.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });


  test('the transaction it cut fails as busy, with nothing committed and nothing run outside it; the next one runs on a new connection, its lock_timeout set again', async () => {
    const db = (await openPgDb(t.db, { create: false }))!;
    try {
      await db.busyWait(1234);
      const pid = await db.prepare('SELECT pg_backend_pid()').pluck().get() as number;
      let err: unknown = null;
      try {
        await db.transaction(async (tx) => {
          await tx.prepare(`UPDATE subcloud SET description = $1 WHERE name = $2`).run('cut', 'pg1');
          // The server ends this session mid-transaction (as it does one idle in a transaction).
          conn.query('SELECT pg_terminate_backend($1)', [pid]);
          await tx.prepare(`UPDATE subcloud SET location = $1 WHERE name = $2`).run('cut', 'pg1');
          await tx.prepare('SELECT 1').get();
        }).immediate();
      } catch (e) {
        err = e;
      }
      expect((err as { code?: string }).code).toBe('SQLITE_BUSY');
      expect(conn.query(`SELECT count(*) AS n FROM subcloud WHERE description = 'cut' OR location = 'cut'`).rows).toEqual([{ n: 0 }]);
      // The next transaction: a new session, with the setting the store gave the first.
      const again = await db.transaction(async (tx) => [await tx.prepare('SELECT pg_backend_pid()').pluck().get(), await tx.prepare(`SELECT current_setting('lock_timeout')`).pluck().get()]).immediate();
      expect(again[0]).not.toBe(pid);
      expect(again[1]).toBe('1234ms');
      expect(await db.prepare(`SELECT current_setting('idle_in_transaction_session_timeout')`).pluck().get()).toBe('5s');
    } finally {
      db.close();
    }
  });
});

describe('an apply whose sessions the server cuts', () => {
  // The simulated sites set their schema's search_path on their connection once: the connection
  // made again after a cut ran without it, and every state after the cut failed (`relation
  // "sim_site" does not exist`). Session settings are now made again on every new connection.
  test('with the simulated sites: goes on and completes every step', async () => {
    const d = tempDir();
    const mine = new SyncPg(d.db);
    try {
      const clouds = Array.from({ length: 9 }, (_, i) => `cut${i + 1}`);
      dcmQuickOk(['--db', d.db, 'subcloud', 'add', ...clouds]);
      dcmQuickOk(['--db', d.db, 'strategy', 'create', '--type', 'patch', '--sim-latency', '500ms..1s', '--max-parallel-subclouds', '3']);
      const apply = dcmSpawn(['--db', d.db, 'strategy', 'apply', '-q', '--lease', '3s']);
      const steps = () => mine.query(`SELECT state, count(*) AS n FROM strategy_step GROUP BY state ORDER BY state`).rows as { state: string; n: number }[];
      // Mid-rollout: some steps mid-state, most not started.
      await waitFor(() => steps().some((r) => r.state !== 'initial' && r.state !== 'complete') && (steps().find((r) => r.state === 'initial')?.n ?? 0) >= 3, 60_000, 20);
      // Every other session on the database is ended by the server: the apply's (the store's, the
      // lease's, the sites'). A write that meets the cut waits and says so; a read is sent again.
      const cut = mine.query(`SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).rows;
      expect(cut.length).toBeGreaterThanOrEqual(3);
      const r = await apply.done;
      expect([r.code, r.stderr]).toEqual([0, expect.not.stringMatching(/does not exist|error/)]);
      expect(steps()).toEqual([{ state: 'complete', n: 9 }]);
    } finally {
      mine.close();
      d.cleanup();
    }
  });
});

describe('data_version on PostgreSQL: moves when another connection\'s write commits, not before', () => {
  test('a reader sees the same number during the write and a new one after its commit', async () => {
    const a = (await openPgDb(t.db, { create: true }))!;
    const b = (await openPgDb(t.db, { create: false }))!;
    try {
      const before = await b.commitCount();
      await a.transaction(async (tx) => {
        await tx.prepare(`UPDATE subcloud SET description = $1 WHERE name = $2`).run('moved', 'pg1');
        // Written, not committed: nothing to read yet, so nothing to wake a reader for.
        expect(await b.commitCount()).toBe(before);
      }).immediate();
      const after = await b.commitCount();
      expect(after).not.toBe(before);
      expect(await b.prepare(`SELECT description FROM subcloud WHERE name = $1`).pluck().get('pg1')).toBe('moved');
      // A rolled-back write moves nothing.
      await expect(
        a
          .transaction(async (tx) => {
            await tx.prepare(`UPDATE subcloud SET description = $1 WHERE name = $2`).run('undone', 'pg1');
            throw new Error('changed my mind');
          })
          .immediate(),
      ).rejects.toThrow('changed my mind');
      expect(await b.commitCount()).toBe(after);
    } finally {
      a.close();
      b.close();
    }
  });
});

describe('db check and db backup on PostgreSQL', () => {
  test('check: ok on a sound database; a missing table and rows that do not tie together are named, exit 1', () => {
    const ok = dcmQuick(['--db', t.db, 'db', 'check', '-f', 'value']);
    expect({ code: ok.code, out: ok.stdout }).toEqual({ code: 0, out: 'ok\n' });
    // Two runs of one step both running: what the orchestrator never leaves, and the database
    // itself refuses while its partial unique index is there (a damaged one has lost it).
    dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', 'pg1', '--sim-latency', '0']);
    conn.query('DROP INDEX step_history_one_running');
    conn.query(`INSERT INTO step_history (step_id, state, attempt, started_at, outcome)
                SELECT id, 'pre check', a, '2026-01-01 00:00:00.000000', 'running' FROM strategy_step, generate_series(1, 2) a`);
    conn.query('ALTER TABLE state_duration RENAME TO state_duration_gone');
    try {
      const bad = dcmQuick(['--db', t.db, 'db', 'check', '-f', 'value']);
      expect(bad.code).toBe(1);
      expect(bad.stdout).toBe('table state_duration is missing\n');
      conn.query('ALTER TABLE state_duration_gone RENAME TO state_duration');
      const runs = dcmQuick(['--db', t.db, 'db', 'check', '-f', 'value']);
      expect({ code: runs.code, out: runs.stdout }).toEqual({ code: 1, out: '1 step(s) with more than one running operation\n' });
    } finally {
      conn.query(`DELETE FROM step_history`);
      conn.query(`CREATE UNIQUE INDEX step_history_one_running ON step_history (step_id) WHERE outcome = 'running'`);
      dcmQuickOk(['--db', t.db, 'strategy', 'delete']);
    }
  });

  test('backup says to use pg_dump (exit 2) and writes nothing', () => {
    const file = `${t.dir}/copy.dump`;
    const r = dcmQuick(['--db', t.db, 'db', 'backup', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: db backup copies a database file; for postgresql:\/\/.* use the server's pg_dump \(pg_dump -Fc -f .*copy\.dump '<address>'\)\n$/);
    expect(fs.existsSync(file)).toBe(false);
  });
});

describe('what is not a dcm database, or not there', () => {
  test('a database holding other tables is refused, and left as it was', () => {
    const foreign = tempDir();
    const c = new SyncPg(foreign.db);
    try {
      c.query('CREATE TABLE orders (id int)');
      const r = dcmQuick(['--db', foreign.db, 'subcloud', 'add', 'x']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/is not a dcm database \(it holds other tables\)\n$/);
      expect((c.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`).rows as unknown[]).length).toBe(1);
    } finally {
      c.close();
      foreign.cleanup();
    }
  });

  test('a server that is not there: one line naming the database, without its password', () => {
    const url = 'postgresql://someone:s3cret@/dcm?host=/nonexistent-dir';
    const r = dcmQuick(['--db', url, 'subcloud', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toContain('s3cret');
    expect(r.stderr).toMatch(/^error: cannot open database postgresql:\/\/someone:\*\*\*@\/dcm\?host=\/nonexistent-dir: .*ENOENT/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
