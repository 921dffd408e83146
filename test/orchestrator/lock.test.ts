/** The apply lock (SPEC §6): one orchestrator per file; a dead holder's lock is taken over. */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { DcmError, EXIT } from '../../src/domain/errors.js';
import { ApplyLock, holderAlive, STALE_MS } from '../../src/orchestrator/lock.js';
import { readLock } from '../../src/store/lock.js';
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

function plant(pid: number, host: string, heartbeatMs = Date.now()): void {
  db.prepare(
    `INSERT OR REPLACE INTO apply_lock (id, pid, host, started_at, heartbeat_at, heartbeat_ms)
     VALUES (1, ?, ?, '2025-01-01 00:00:00.000000', '2025-01-01 00:00:00.000000', ?)`,
  ).run(pid, host, heartbeatMs);
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
    expect(readLock(db)).toMatchObject({ pid: process.pid, host: os.hostname() });
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

  test('holderAlive: a stale heartbeat is dead even when the pid exists', () => {
    const row = { pid: process.pid, host: os.hostname(), started_at: '', heartbeat_at: '', heartbeat_ms: Date.now() };
    expect(holderAlive(row)).toBe(true);
    expect(holderAlive({ ...row, heartbeat_ms: Date.now() - STALE_MS - 1 })).toBe(false);
  });

  test('release does not remove a lock another process took over', () => {
    const lock = new ApplyLock(db, 'f.db');
    lock.acquire();
    plant(process.ppid, os.hostname());
    lock.release();
    expect(readLock(db)).toMatchObject({ pid: process.ppid });
  });
});
