/** The apply lock (SPEC §6): one orchestrator per file; a dead holder's lock is taken over. */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { DcmError, EXIT } from '../../src/domain/errors.js';
import { ApplyLock, holderAlive, hostName, LostLockError, STALE_MS } from '../../src/orchestrator/lock.js';
import { realRuntime, REAL_PROCS } from '../../src/platform/runtime.js';

const rt = realRuntime({});
const processStart = (pid: number) => REAL_PROCS.startOf(pid);
import { beat, readLock } from '../../src/store/lock.js';
import { openDb, type Db } from '../../src/store/open.js';
import { tempDir } from '../helpers/cli.js';

let db: Db;
let cleanup: () => void;

beforeEach(async () => {
  const t = tempDir('dcm-lock-');
  db = (await openDb(t.db, { create: true }))!;
  cleanup = () => {
    db.close();
    t.cleanup();
  };
});
afterEach(() => cleanup());

/** Write a lock row as another process would; its start time is read from /proc unless given. */
async function plant(pid: number, host: string, heartbeatMs = Date.now(), procStart: string | null = processStart(pid)): Promise<void> {
  await db.prepare(
    `INSERT OR REPLACE INTO apply_lock (id, pid, host, started_at, heartbeat_at, heartbeat_ms, token, proc_start)
     VALUES (1, ?, ?, '2025-01-01 00:00:00.000000', '2025-01-01 00:00:00.000000', ?, 'their-token', ?)`,
  ).run(pid, host, heartbeatMs, procStart);
}

/** A pid that existed and is gone. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

async function refusal(lock: ApplyLock): Promise<DcmError> {
  try {
    await lock.acquire();
  } catch (err) {
    return err as DcmError;
  }
  throw new Error('acquire did not refuse');
}

describe('ApplyLock', () => {
  test('acquire writes who holds it; release removes it', async () => {
    const lock = new ApplyLock(db, 'f.db', rt);
    expect(await lock.acquire()).toEqual({});
    expect(await readLock(db)).toMatchObject({ pid: process.pid, host: os.hostname(), token: lock.token, proc_start: processStart(process.pid) });
    await lock.release();
    expect(await readLock(db)).toBeUndefined();
  });

  test('a live holder on this host: refused with exit 4, naming pid, host and since when', async () => {
    await plant(process.ppid, os.hostname());
    const err = await refusal(new ApplyLock(db, 'f.db', rt));
    expect(err.exitCode).toBe(EXIT.locked);
    expect(err.message).toBe(`another orchestrator holds f.db: pid ${process.ppid} on host ${os.hostname()} since 2025-01-01 00:00:00.000000`);
    expect(await readLock(db)).toMatchObject({ pid: process.ppid });
  });

  test('a holder on this host whose pid is gone: taken over', async () => {
    const pid = deadPid();
    await plant(pid, os.hostname());
    const lock = new ApplyLock(db, 'f.db', rt);
    expect((await lock.acquire()).tookOverFrom).toMatchObject({ pid, host: os.hostname() });
    expect(await readLock(db)).toMatchObject({ pid: process.pid });
    await lock.release();
  });

  test('a holder on another host: alive while its heartbeat is fresh, taken over once it is stale', async () => {
    await plant(4242, 'elsewhere.example');
    expect((await refusal(new ApplyLock(db, 'f.db', rt))).exitCode).toBe(EXIT.locked);
    await plant(4242, 'elsewhere.example', Date.now() - STALE_MS - 1000);
    expect((await new ApplyLock(db, 'f.db', rt).acquire()).tookOverFrom).toMatchObject({ pid: 4242, host: 'elsewhere.example' });
  });

  test('this host: a live pid with its start time is alive however old its heartbeat (a stopped process)', async () => {
    await plant(process.ppid, os.hostname(), Date.now() - 45_000);
    const err = await refusal(new ApplyLock(db, 'f.db', rt));
    expect(err.exitCode).toBe(EXIT.locked);
    expect(err.message).toMatch(new RegExp(`pid ${process.ppid} is alive but has not written for 4[5-6] s; if it is hung, stop it$`));
  });

  test('this host: a pid reused by another process (another start time) is not the holder', async () => {
    await plant(process.ppid, os.hostname(), Date.now(), 'another-boot:12345');
    expect(holderAlive((await readLock(db))!, rt)).toBe(false);
    expect((await new ApplyLock(db, 'f.db', rt).acquire()).tookOverFrom).toMatchObject({ pid: process.ppid });
  });

  test('a lock written without a start time (older dcm): the heartbeat decides, as it did', async () => {
    await plant(process.ppid, os.hostname(), Date.now(), null);
    expect(holderAlive((await readLock(db))!, rt)).toBe(true);
    await plant(process.ppid, os.hostname(), Date.now() - STALE_MS - 1, null);
    expect(holderAlive((await readLock(db))!, rt)).toBe(false);
  });

  test('DCM_HOST names the host; the pid of another host means nothing here', async () => {
    expect(hostName({ DCM_HOST: 'node-a' })).toBe('node-a');
    expect(hostName({})).toBe(os.hostname());
    await plant(process.pid, 'node-b', Date.now() - STALE_MS - 1);
    expect(holderAlive((await readLock(db))!, { ...rt, host: 'node-a' })).toBe(false);
  });

  test('the fence: once another process holds the lock, check() throws (exit 4) naming it, beats fail', async () => {
    const lock = new ApplyLock(db, 'f.db', rt);
    await lock.acquire();
    await lock.check(db);
    expect(await beat(db, lock.token)).toBe(true);
    await plant(4242, 'elsewhere.example');
    let err: unknown;
    try {
      await lock.check(db);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LostLockError);
    expect((err as LostLockError).exitCode).toBe(EXIT.locked);
    expect((err as LostLockError).message).toBe('lost the apply lock to pid 4242 on host elsewhere.example');
    expect(await beat(db, lock.token)).toBe(false);
  });

  test('release does not remove a lock another process took over', async () => {
    const lock = new ApplyLock(db, 'f.db', rt);
    await lock.acquire();
    await plant(process.ppid, os.hostname());
    await lock.release();
    expect(await readLock(db)).toMatchObject({ pid: process.ppid });
  });
});
