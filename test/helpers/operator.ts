/**
 * An operator's moves against a running exec apply, as the event record's and the post-mortem
 * report's tests make them: each from its own shell, as its own user.
 */
import { expect } from '@jest/globals';
import { dcmOk, waitFor } from './cli.js';
import { json, withSql } from './fleet.js';
import { spawnDcm } from './history.js';
import { dcmQuickOk } from './quick.js';

/** The host every operator's shell names (`DCM_HOST`): the record must say where each move came from. */
export const OPS_HOST = 'ops-host';

/** A row of `dcm strategy events -f json`. */
export interface RecordedEvent {
  time: string;
  event: string;
  user: string;
  host: string;
  pid: number;
  details: string;
}

/** The event record; an empty one prints a row of `<none>`, as every empty list does. */
export const recordedEvents = (db: string): RecordedEvent[] =>
  json<RecordedEvent[]>(dcmQuickOk(['--db', db, 'strategy', 'events', '-f', 'json'])).filter((e) => e.event !== '<none>');

/** Runs recorded going with their pid: the apply has a run out that a kill -9 leaves behind. */
export const runningWithPid = async (db: string): Promise<number> =>
  await withSql(db, async (d) => await d.prepare("SELECT count(*) FROM step_history WHERE outcome = 'running' AND pid IS NOT NULL").pluck().get() as number);

/**
 * bob applies; alice pauses it (once the apply has said so), widens the window to 2 and resumes;
 * once a run is going again the apply is killed with SIGKILL. Returns the killed apply's pid.
 */
export async function pauseResizeResumeKill(db: string, as: (user: string) => Record<string, string>): Promise<number> {
  const first = spawnDcm(['--db', db, 'strategy', 'apply'], as('bob'));
  const gone = () => first.child.exitCode !== null;
  await waitFor(async () => await runningWithPid(db) > 0 || gone(), 60_000, 5);
  dcmOk(['--db', db, 'strategy', 'pause'], { env: as('alice') });
  await waitFor(() => first.stderr().includes('paused: no new subcloud starts') || gone(), 60_000, 5);
  dcmOk(['--db', db, 'strategy', 'update', '--max-parallel-subclouds', '2'], { env: as('alice') });
  dcmOk(['--db', db, 'strategy', 'resume'], { env: as('alice') });
  await waitFor(async () => await runningWithPid(db) > 0 || gone(), 60_000, 5);
  expect(first.child.exitCode).toBeNull();
  first.child.kill('SIGKILL');
  expect((await first.done).signal).toBe('SIGKILL');
  return first.child.pid!;
}
