/**
 * Faults of the file under a running apply (SPEC §2.1), each caused for real: the file removed or
 * replaced, a file-size limit (`ulimit -f`), another writer holding the file past the busy
 * timeout, random bytes in a page. No stack trace in any of them, and nothing committed is lost.
 */
import { describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { statesOf } from '../../src/domain/types.js';
import { BIN, dcm, ROOT, sleep, waitFor } from '../helpers/cli.js';
import { withSql } from '../helpers/fleet.js';
import { createFleet, history, names, okRunProblems, spawnDcm, strategyState, tempPerTest } from '../helpers/history.js';

const PATCH = statesOf('patch');

const temp = tempPerTest();

const okRuns = (db: string) => history(db).filter((h) => h.outcome === 'ok').length;
const noTrace = (stderr: string) => expect(stderr).not.toMatch(/\n\s+at /);

describe('apply: the file under the orchestrator', () => {
  // Claim, README "Your data", the file removed under a running apply: nothing new starts, exit 1 saying so.
  test('removed: exit 1 at once, saying so, with nothing started after it', async () => {
    const t = temp();
    createFleet(t.db, names(40), ['--max-parallel-subclouds', '5', '--sim-latency', '100ms..200ms']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => okRuns(t.db) >= 5, 20_000, 10);
    fs.rmSync(t.db);
    // How soon it exits is timed by the bench (figure 9-removed), not bounded here.
    const r = await apply.done;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^error: ${t.db} was removed while the strategy was applying$`, 'm'));
    noTrace(r.stderr);
  });

  // Claim, README "Your data", the file replaced under a running apply: exit 1, nothing written to the file now at the
  // path, and no -wal of the old file left to pair with it.
  test('replaced by another file: exit 1, and the file now at the path is never written', async () => {
    const t = temp();
    createFleet(t.db, names(40), ['--max-parallel-subclouds', '5', '--sim-latency', '100ms..200ms']);
    const backup = `${t.db}.backup`;
    await withSql(t.db, (d) => d.exec(`VACUUM INTO '${backup}'`));
    const backupBytes = fs.readFileSync(backup);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => okRuns(t.db) >= 5, 20_000, 10);
    fs.renameSync(backup, t.db);
    const r = await apply.done;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^error: ${t.db} was replaced while the strategy was applying$`, 'm'));
    noTrace(r.stderr);
    expect(fs.readFileSync(t.db).equals(backupBytes)).toBe(true);
    // No WAL of the old file is left to pair with the new one.
    expect(fs.existsSync(`${t.db}-wal`) ? fs.statSync(`${t.db}-wal`).size : 0).toBe(0);
    expect(await withSql(t.db, (d) => d.pragma('integrity_check', { simple: true }))).toBe('ok');
    expect(strategyState(t.db)).toBe('initial');
  });

  // Claim, README "Your data", a full disk during apply: it starts nothing new and says `… free space, then dcm strategy
  // apply resumes`; the strategy stays `applying`, and the next apply runs again only what was in flight.
  test('a file-size limit mid-apply: exit 1 "disk full", the strategy stays applying, and a later apply finishes it', async () => {
    const t = temp();
    const clouds = names(200);
    createFleet(t.db, clouds, ['--max-parallel-subclouds', '50', '--sim-latency', '0..2ms']);
    await withSql(t.db, (d) => d.pragma('wal_checkpoint(TRUNCATE)'));
    // Room for the file as it is plus a few commits of the WAL, not for the whole apply.
    const limitKb = Math.ceil(fs.statSync(t.db).size / 1024) + 64;
    const child = spawn('bash', ['-c', `ulimit -f ${limitKb}; exec "${process.execPath}" "${BIN}" --db "${t.db}" strategy apply`], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr).toMatch(
      new RegExp(`^error: disk full writing ${t.db}: nothing committed was lost; free space, then dcm strategy apply resumes$`, 'm'),
    );
    noTrace(stderr);
    expect(strategyState(t.db)).toBe('applying');
    const mid = okRuns(t.db);
    expect(mid).toBeGreaterThan(0);
    expect(mid).toBeLessThan(clouds.length * PATCH.length);

    const again = dcm(['--db', t.db, 'strategy', 'apply', '-q']);
    expect(again.code).toBe(0);
    expect(okRunProblems(history(t.db), clouds, PATCH)).toEqual([]);
    expect(await withSql(t.db, (d) => d.pragma('integrity_check', { simple: true }))).toBe('ok');
  });

  // Claim, README "Your data", another writer holding the file past the busy timeout: the orchestrator says so once
  // and tries again; it never dies of SQLITE_BUSY.
  test('another writer holding the file for 13 s: the apply waits, says so once, and completes', async () => {
    const t = temp();
    const clouds = names(20);
    createFleet(t.db, clouds, ['--max-parallel-subclouds', '5', '--sim-latency', '50ms..100ms']);
    const apply = spawnDcm(['--db', t.db, 'strategy', 'apply']);
    await waitFor(() => okRuns(t.db) >= 5, 20_000, 10);
    const other = new Database(t.db);
    other.exec('BEGIN IMMEDIATE');
    await sleep(13_000);
    other.exec('COMMIT');
    other.close();
    const r = await apply.done;
    expect(r.code).toBe(0);
    expect(r.stderr.match(/the database is locked by another process: waiting/g)).toHaveLength(1);
    expect(r.stderr).not.toMatch(/error:/);
    expect(okRunProblems(history(t.db), clouds, PATCH)).toEqual([]);
  }, 60_000);

  // Claim, README "Your data", a damaged file under apply: the quick check refuses it (exit 1, naming it), nothing written.
  test('random bytes in a page: apply refuses the file (exit 1, naming it) and writes nothing', async () => {
    const t = temp();
    createFleet(t.db, names(300), ['--max-parallel-subclouds', '50', '--sim-latency', '0..1ms']);
    await withSql(t.db, (d) => d.pragma('wal_checkpoint(TRUNCATE)'));
    const { pageSize, root } = await withSql(t.db, async (d) => ({
      pageSize: await d.pragma('page_size', { simple: true }) as number,
      root: await d.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'strategy_step'").pluck().get() as number,
    }));
    // Garbage over the cell pointers of the steps' root page: a b-tree that no longer parses.
    const fd = fs.openSync(t.db, 'r+');
    const junk = Buffer.alloc(pageSize / 2, 0x5a);
    fs.writeSync(fd, junk, 0, junk.length, (root - 1) * pageSize + 8);
    fs.closeSync(fd);
    const before = fs.readFileSync(t.db);
    const r = dcm(['--db', t.db, 'strategy', 'apply']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^error: ${t.db} is damaged \\(.*\\).*\\n$`));
    noTrace(r.stderr);
    expect(fs.readFileSync(t.db).equals(before)).toBe(true);
  });
});
