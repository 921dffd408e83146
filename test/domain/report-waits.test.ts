/**
 * Issue 34, item 2: the report's waits for maintenance windows and its orchestrators that died,
 * read from the event record (domain/report-waits.ts, domain/report-deaths.ts).
 */
import { describe, expect, test } from '@jest/globals';
import { maintenanceWaits } from '../../src/domain/report-waits.js';
import { orchestratorDeaths } from '../../src/domain/report-deaths.js';

const ev = (atUs: number, event: string, details: string, user = 'dcm', host = 'h1', pid = 10) => ({ atUs, event, details, user, host, pid });
const WAIT = (g: string, opens = '2026-12-05T22:00:00.000Z') => `group ${g} waits for its maintenance window Sat 22:00-Sun 06:00 (UTC): opens ${opens}`;
const OPEN = (g: string) => `group ${g}: maintenance window Sat 22:00-Sun 06:00 (UTC) is open, its subclouds start`;

describe('maintenance waits', () => {
  test('opened; cleared by an operator; cut short by the apply\'s end; said twice by two workers: one wait', () => {
    const waits = maintenanceWaits([
      ev(1, 'maintenance wait', WAIT('night')),
      ev(2, 'maintenance wait', WAIT('edge')),
      ev(2, 'maintenance wait', WAIT('night'), 'dcm', 'h2', 20),
      ev(3, 'group updated', 'group edge: maintenance window: Sat 22:00-Sun 06:00 -> None', 'alice', 'ops'),
      ev(4, 'maintenance window open', OPEN('night')),
      ev(5, 'maintenance wait', WAIT('night', '2026-12-12T22:00:00.000Z')),
      ev(6, 'apply ended', 'stopped by SIGINT (exit 130); the strategy stays applying'),
      ev(7, 'maintenance wait', WAIT('late')),
    ]);
    expect(waits.map((w) => [w.group, w.fromUs, w.untilUs, w.ended])).toEqual([
      ['night', 1, 4, 'the window opened'],
      ['edge', 2, 3, 'window changed by alice@ops: maintenance window: Sat 22:00-Sun 06:00 -> None'],
      ['night', 5, 6, 'apply ended: stopped by SIGINT (exit 130); the strategy stays applying'],
      ['late', 7, null, 'still waiting'],
    ]);
    expect(waits[0]).toMatchObject({ window: 'Sat 22:00-Sun 06:00 (UTC)', opens: '2026-12-05T22:00:00.000Z' });
    expect(maintenanceWaits([ev(1, 'paused', 'applying -> paused')])).toEqual([]);
  });
});

describe('orchestrators that died', () => {
  test('a lock taken over, with the runs its apply adopted; a worker taken over', () => {
    const deaths = orchestratorDeaths([
      ev(1, 'apply started', 'initial -> applying', 'bob', 'h1', 10),
      ev(5, 'lock taken over', 'took over the apply lock of pid 10 on h1 (no longer running)', 'carol', 'h1', 11),
      ev(5, 'apply started', 'resuming (state applying)', 'carol', 'h1', 11),
      ev(6, 'runs adopted', '1 run(s) adopted, 0 interrupted to run again', 'carol', 'h1', 11),
      ev(9, 'worker taken over', 'pid 30 on h3: its lease ran out 12 s ago; 2 run(s) adopted, 1 interrupted', 'dave', 'h4', 40),
    ]);
    expect(deaths).toEqual([
      { atUs: 5, orchestrator: 'pid 10 on h1', why: 'no longer running', foundBy: 'carol@h1 (pid 11)', runs: '1 run(s) adopted, 0 interrupted to run again' },
      { atUs: 9, orchestrator: 'pid 30 on h3', why: 'its lease ran out 12 s ago', foundBy: 'dave@h4 (pid 40)', runs: '2 run(s) adopted, 1 interrupted' },
    ]);
  });
});
