/**
 * The workers' rows and claims (src/store/workers.ts), in SQL both backends run, here on a file:
 * a claim holds only within the stage's window counted across live workers and the worker's cap
 * (its share, or --max-local); a step another live worker holds, or that moved on since it was
 * read, is refused; the granted are written and the refused left as they were. A worker taken over
 * leaves its runs to adopt (same host) or closes them interrupted (another host). And the
 * migration that made one `running` operation per step the database's rule.
 */
import { REAL_CLOCK } from '../../src/platform/clock.js';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { openDb, type Db } from '../../src/store/open.js';
import { APPLICATION_ID, MIGRATIONS } from '../../src/store/migrations.js';
import { addWorker, claimSteps, listWorkers, shareOfWindow, sharesOfWindow, stageElsewhere, stepFences, takeOver, workerStatuses } from '../../src/store/workers.js';
import { dcmOk } from '../helpers/cli.js';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';

let dir: string;
let db: Db;

const worker = (host = 'h1', lease = 30_000) =>
  addWorker(db, { host, pid: 1, procStart: null, token: `${host}-${Math.random()}`, leaseMs: lease, maxLocal: null });
const steps = async () => await db.prepare('SELECT id, stage, state, owner, fence FROM strategy_step ORDER BY id').all() as { id: number; stage: number; state: string; owner: number | null; fence: number }[];
const ask = (ids: number[], state = 'initial') => ids.map((id) => ({ id, stage: 1, state }));
const setStep = (id: number, state: string, owner: number | null) => db.prepare('UPDATE strategy_step SET state = ?, owner = ? WHERE id = ?').run(state, owner, id);

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-workers-'));
  const file = path.join(dir, 'dcm.db');
  dcmOk(['--db', file, 'subcloud', 'add', 's1', 's2', 's3', 's4', 's5', 's6']);
  dcmOk(['--db', file, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '4']);
  db = (await openDb(file, { create: false, write: true }))!;
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('claims', () => {
  test('within the window across live workers and the worker\'s share; the granted written, the refused left', async () => {
    const me = await worker('h1');
    const other = await worker('h2');
    const [a, b, c, d, e] = (await steps()).map((s) => s.id);
    await setStep(a, 'installing license', other);
    // The window is 4, one in flight elsewhere: 3 free; this worker's share is 4 / 2 = 2.
    // The granted are written, the refused left as they were: the batch leaves them out.
    const three = await claimSteps(db, me, null, ask([b, c, d]));
    expect([...three.refused]).toEqual([[d, 'full']]);
    expect([...three.granted]).toEqual([
      [b, 1],
      [c, 1],
    ]);
    expect((await steps()).filter((s) => s.owner === me).map((s) => [s.id, s.fence])).toEqual([
      [b, 1],
      [c, 1],
    ]);
    expect((await steps()).find((s) => s.id === d)).toMatchObject({ owner: null, fence: 0 });
    // --max-local 3 (its row says so, as its join wrote it) lets it past its share, but never past
    // the window (2 of mine and 1 elsewhere, of 4).
    await setStep(b, 'installing license', me);
    await setStep(c, 'installing license', me);
    await db.prepare('UPDATE apply_worker SET max_local = 3 WHERE id = $1').run(me);
    const past = await claimSteps(db, me, 3, ask([d, e]));
    expect([[...past.granted], [...past.refused]]).toEqual([[[d, 1]], [[e, 'full']]]);
    // Its first operation commits with the claim: then it is in flight, seen from the other worker.
    await setStep(d, 'installing license', me);
    expect(await stageElsewhere(db, other, 1)).toEqual({ othersInFlight: 3, open: 6 });
  });

  test('a share is what the capped workers leave of the window, among the uncapped, the first joined taking the remainder, at least one', () => {
    const w = (...caps: (number | null)[]) => caps.map((cap, i) => ({ id: i + 1, cap }));
    expect(shareOfWindow(12, w(null, null, null), 2)).toBe(4);
    // --max-local 2 on one of three: the other two share the 10 it leaves, and the window is used.
    expect(shareOfWindow(12, w(null, null, 2), 1)).toBe(5);
    // 10 among three: the first joined takes the one left over, and the shares add up to the window.
    expect([1, 2, 3].map((me) => shareOfWindow(10, w(null, null, null), me))).toEqual([4, 3, 3]);
    expect([...sharesOfWindow(500, w(null, null, null)).values()].reduce((a, b) => a + b)).toBe(500);
    // Caps past the window count as the window; capped workers that take it all leave one each
    // (the shares then add up past the window, which is counted whole).
    expect(shareOfWindow(8, w(null, 50), 1)).toBe(1);
    expect([...sharesOfWindow(8, w(null, 50)).values()]).toEqual([8, 1]);
    expect(shareOfWindow(8, w(null), 1)).toBe(8);
    // Alone, before any worker was read: the whole window.
    expect(shareOfWindow(8, [], 7)).toBe(8);
  });

  test('a step another live worker holds, or that moved on since it was read, is refused as taken; a gone worker\'s is free', async () => {
    const me = await worker('h1');
    const other = await worker('h2');
    const [a, b, c] = (await steps()).map((s) => s.id);
    await setStep(a, 'initial', other);
    await setStep(b, 'complete', null);
    expect([...(await claimSteps(db, me, null, ask([a, b]))).refused]).toEqual([
      [a, 'taken'],
      [b, 'taken'],
    ]);
    // An owner with no row (it left, or was taken over before the store said so) holds nothing.
    await setStep(c, 'initial', 999);
    expect([...(await claimSteps(db, me, null, ask([c]))).granted]).toEqual([[c, 1]]);
    // Each claim counts up the step's claims: its runs' DCM_FENCE changes with every taker.
    await setStep(c, 'installing license', null);
    expect([...(await claimSteps(db, other, null, ask([c], 'installing license'))).granted]).toEqual([[c, 2]]);
  });

  test('a worker taken over: its runs kept for a taker on its host (with a new fence), closed interrupted from another; its steps let go', async () => {
    const gone = await worker('h1');
    const [a, b] = (await steps()).map((s) => s.id);
    await setStep(a, 'installing license', gone);
    await setStep(b, 'installing license', gone);
    const insert = db.prepare(`INSERT INTO step_history (step_id, state, attempt, started_at, outcome) VALUES (?, 'installing license', 1, '2026-01-01 00:00:00.000000', 'running')`);
    await insert.run(a);
    const row = (await listWorkers(db)).find((w) => w.id === gone)!;
    const same = await worker('h1');
    expect(await takeOver(db, row, same, true, 'gone')).toEqual({ adopted: 1, interrupted: 0 });
    expect((await steps()).slice(0, 2).map((s) => s.owner)).toEqual([same, null]);
    // The adopted step changed hands: a new fence for its next runs, as a claim gives.
    expect((await steps()).slice(0, 2).map((s) => s.fence)).toEqual([1, 0]);
    expect(await stepFences(db, [a, b])).toEqual(new Map([[a, 1], [b, 0]]));
    expect((await listWorkers(db)).map((w) => w.id)).toEqual([same]);
    const far = await worker('h2');
    const sameRow = (await listWorkers(db)).find((w) => w.id === same)!;
    expect(await takeOver(db, sameRow, far, false, 'its worker is gone: lease')).toEqual({ adopted: 0, interrupted: 1 });
    expect(await db.prepare('SELECT outcome, details FROM step_history').all()).toEqual([{ outcome: 'interrupted', details: 'its worker is gone: lease' }]);
    expect((await steps())[0].owner).toBeNull();
    expect(await workerStatuses(db)).toEqual([{ host: 'h2', pid: 1, heartbeatMs: expect.any(Number), leaseMs: 30_000, inFlight: 0, done: 0 }]);
  });
});

describe('one running operation per step', () => {
  test('the migration closes all but the latest of a step\'s running rows, then the database refuses a second one', async () => {
    const file = path.join(dir, 'old.db');
    const raw = new Database(file);
    // A file of version 13, the one before the workers' migration (13 -> 14).
    const BEFORE_WORKERS = 13;
    for (let v = 0; v < BEFORE_WORKERS; v++) MIGRATIONS[v](raw, REAL_CLOCK);
    raw.pragma(`application_id = ${APPLICATION_ID}`);
    raw.pragma(`user_version = ${BEFORE_WORKERS}`);
    raw.exec(`
      INSERT INTO strategy (id, type, stop_on_failure, state, extra_args, created_at) VALUES (1, 'patch', 0, 'applying', '{}', '2026-01-01 00:00:00.000000');
      INSERT INTO subcloud (id, name, group_id, management, availability, deploy_status, patching_sync, usm_sync, kubernetes_sync, kube_rootca_sync, firmware_sync, created_at)
        VALUES (1, 's1', 1, 'managed', 'online', 'complete', 'out-of-sync', 'out-of-sync', 'out-of-sync', 'out-of-sync', 'out-of-sync', '2026-01-01 00:00:00.000000');
      INSERT INTO strategy_step (id, strategy_id, subcloud_id, stage, state, created_at) VALUES (1, 1, 1, 1, 'installing license', '2026-01-01 00:00:00.000000');
      INSERT INTO step_history (step_id, state, attempt, started_at, outcome) VALUES (1, 'pre check', 1, '2026-01-01 00:00:00.000000', 'running');
      INSERT INTO step_history (step_id, state, attempt, started_at, outcome) VALUES (1, 'installing license', 1, '2026-01-01 00:00:01.000000', 'running');
    `);
    raw.close();
    const up = (await openDb(file, { create: false, write: true }))!;
    try {
      expect(await up.prepare('SELECT state, outcome FROM step_history ORDER BY id').all()).toEqual([
        { state: 'pre check', outcome: 'interrupted' },
        { state: 'installing license', outcome: 'running' },
      ]);
      // Caught, not `rejects.toThrow`: better-sqlite3's native side makes its errors with the class
      // of the first test file that loaded it in this jest worker, which is no Error of this file's.
      const refused = await up.prepare(`INSERT INTO step_history (step_id, state, attempt, started_at, outcome) VALUES (1, 'x', 2, 'now', 'running')`).run().then(
        () => null,
        (err: { message?: string }) => err.message,
      );
      expect(refused).toMatch(/UNIQUE constraint failed/);
    } finally {
      up.close();
    }
  });
});
