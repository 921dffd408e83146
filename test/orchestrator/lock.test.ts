/** The apply lock (SPEC §6): one orchestrator per file; a dead holder's lock is taken over. */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { DcmError, EXIT } from '../../src/domain/errors.js';
import { ApplyLock, holderAlive, hostName, LostLockError, processStart, STALE_MS } from '../../src/orchestrator/lock.js';
import { beat, readLock } from '../../src/store/lock.js';
import { openDb, type Db } from '../../src/store/open.js';
import { tempDir } from '../helpers/cli.js';

let db: Db;
let cleanup: () => void;

beforeEach(() => {
  const t = tempDir('dcm-lock-');
  db = openDb(t.db, { create: true })!;
  cleanup = () => {
    db.close();
    t.cleanup();
  };
});
afterEach(() => cleanup());

/** Write a lock row as another process would; its start time is read from /proc unless given. */
function plant(pid: number, host: string, heartbeatMs = Date.now(), procStart: string | null = processStart(pid)): void {
  db.prepare(
    `INSERT OR REPLACE INTO apply_lock (id, pid, host, started_at, heartbeat_at, heartbeat_ms, token, proc_start)
     VALUES (1, ?, ?, '2025-01-01 00:00:00.000000', '2025-01-01 00:00:00.000000', ?, 'their-token', ?)`,
  ).run(pid, host, heartbeatMs, procStart);
}

/** A pid that existed and is gone. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

function refusal(lock: ApplyLock): DcmError {
  try {
    lock.acquire();
  } catch (err) {
    return err as DcmError;
  }
  throw new Error('acquire did not refuse');
}

describe('ApplyLock', () => {
  test('acquire writes who holds it; release removes it', () => {
    const lock = new ApplyLock(db, 'f.db');
    expect(lock.acquire()).toEqual({});
    expect(readLock(db)).toMatchObject({ pid: process.pid, host: os.hostname(), token: lock.token, proc_start: processStart(process.pid) });
    lock.release();
    expect(readLock(db)).toBeUndefined();
  });

  test('a live holder on this host: refused with exit 4, naming pid, host and since when', () => {
    plant(process.ppid, os.hostname());
    const err = refusal(new ApplyLock(db, 'f.db'));
    expect(err.exitCode).toBe(EXIT.locked);
    expect(err.message).toBe(`another orchestrator holds f.db: pid ${process.ppid} on host ${os.hostname()} since 2025-01-01 00:00:00.000000`);
    expect(readLock(db)).toMatchObject({ pid: process.ppid });
  });

  test('a holder on this host whose pid is gone: taken over', () => {
    const pid = deadPid();
    plant(pid, os.hostname());
    const lock = new ApplyLock(db, 'f.db');
    expect(lock.acquire().tookOverFrom).toMatchObject({ pid, host: os.hostname() });
    expect(readLock(db)).toMatchObject({ pid: process.pid });
    lock.release();
  });

  test('a holder on another host: alive while its heartbeat is fresh, taken over once it is stale', () => {
    plant(4242, 'elsewhere.example');
    expect(refusal(new ApplyLock(db, 'f.db')).exitCode).toBe(EXIT.locked);
    plant(4242, 'elsewhere.example', Date.now() - STALE_MS - 1000);
    expect(new ApplyLock(db, 'f.db').acquire().tookOverFrom).toMatchObject({ pid: 4242, host: 'elsewhere.example' });
  });

  test('this host: a live pid with its start time is alive however old its heartbeat (a stopped process)', () => {
    plant(process.ppid, os.hostname(), Date.now() - 45_000);
    const err = refusal(new ApplyLock(db, 'f.db'));
    expect(err.exitCode).toBe(EXIT.locked);
    expect(err.message).toMatch(new RegExp(`pid ${process.ppid} is alive but has not written for 4[5-6] s; if it is hung, stop it$`));
  });

  test('this host: a pid reused by another process (another start time) is not the holder', () => {
    plant(process.ppid, os.hostname(), Date.now(), 'another-boot:12345');
    expect(holderAlive(readLock(db)!)).toBe(false);
    expect(new ApplyLock(db, 'f.db').acquire().tookOverFrom).toMatchObject({ pid: process.ppid });
  });

  test('a lock written without a start time (older dcm): the heartbeat decides, as it did', () => {
    plant(process.ppid, os.hostname(), Date.now(), null);
    expect(holderAlive(readLock(db)!)).toBe(true);
    plant(process.ppid, os.hostname(), Date.now() - STALE_MS - 1, null);
    expect(holderAlive(readLock(db)!)).toBe(false);
  });

  test('DCM_HOST names the host; the pid of another host means nothing here', () => {
    expect(hostName({ DCM_HOST: 'node-a' })).toBe('node-a');
    expect(hostName({})).toBe(os.hostname());
    plant(process.pid, 'node-b', Date.now() - STALE_MS - 1);
    expect(holderAlive(readLock(db)!, Date.now(), 'node-a')).toBe(false);
  });

  test('the fence: once another process holds the lock, check() throws (exit 4) naming it, beats fail', () => {
    const lock = new ApplyLock(db, 'f.db');
    lock.acquire();
    expect(() => lock.check()).not.toThrow();
    expect(beat(db, lock.token)).toBe(true);
    plant(4242, 'elsewhere.example');
    let err: unknown;
    try {
      lock.check();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LostLockError);
    expect((err as LostLockError).exitCode).toBe(EXIT.locked);
    expect((err as LostLockError).message).toBe('lost the apply lock to pid 4242 on host elsewhere.example');
    expect(beat(db, lock.token)).toBe(false);
  });

  test('release does not remove a lock another process took over', () => {
    const lock = new ApplyLock(db, 'f.db');
    lock.acquire();
    plant(process.ppid, os.hostname());
    lock.release();
    expect(readLock(db)).toMatchObject({ pid: process.ppid });
  });
});
