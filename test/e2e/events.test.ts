/**
 * `dcm strategy events` (issue 19, "an event record"): a real apply over the exec driver, driven
 * from other shells — pause, update, resume, a kill -9 of apply and a re-apply that adopts its
 * runs, an abort, a retry and a last apply — lists each event once, in order, with who did it; a
 * refused command records nothing; the report's timeline carries a mark per event (in Chromium);
 * the record goes with the strategy.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm, waitFor } from '../helpers/cli.js';
import { isPgUrl } from '../../src/domain/db-url.js';
import { withSql } from '../helpers/fleet.js';
import { killLeftovers, names, spawnDcm } from '../helpers/history.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { OPS_HOST, pauseResizeResumeKill, recordedEvents } from '../helpers/operator.js';
import { openFile, outputPath, withChromium } from '../helpers/browser.js';
import { dcmQuick, dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => {
  killLeftovers();
  f?.cleanup();
});

const HOST = OPS_HOST;
/** Each shell its user: the record must name who did what. */
const as = (user: string) => ({ ...f.env, USER: user, DCM_HOST: HOST });
const events = () => recordedEvents(f.db);
const eventNames = () => events().map((e) => e.event);

describe('the event record of a run with a pause, an update, a kill -9, an abort and a retry', () => {
  test('each event once, in order, with who; a refused command records nothing; the report marks them; delete keeps them', async () => {
    f = execFixture();
    const clouds = names(6);
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...clouds]);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1', '--driver', 'exec', '--exec-config',
      f.config(`defaults: {env: {STEP_MIN_MS: "150", STEP_MAX_MS: "250"}}\nstates:\n  "*": [${f.step}, "{cloud}", "{state}"]\n`)]);
    expect(dcmQuickOk(['--db', f.db, 'strategy', 'events', '-f', 'value', '-c', 'event']).stdout).toBe('<none>\n');

    // First apply (bob): paused, resized and resumed by alice from another shell, then killed.
    const firstPid = await pauseResizeResumeKill(f.db, as);

    // The re-apply (carol) takes the dead one's lock and adopts what it left; dave aborts it.
    const second = spawnDcm(['--db', f.db, 'strategy', 'apply'], as('carol'));
    await waitFor(() => eventNames().includes('runs adopted') || second.child.exitCode !== null, 20_000, 5);
    expect(second.child.exitCode).toBeNull();
    dcmQuickOk(['--db', f.db, 'strategy', 'abort'], { env: as('dave') });
    expect((await second.done).code).toBe(3);

    // Retried by erin, applied to the end by bob.
    const retry = dcmQuickOk(['--db', f.db, 'strategy', 'retry'], { env: as('erin') });
    const reset = retry.stderr.split('\n').filter((l) => l.startsWith('  ')).map((l) => l.trim());
    expect(reset.length).toBeGreaterThan(0);

    // Refused, for bad state or bad input: no event, no change.
    const before = { events: events(), strategy: dcmQuickOk(['--db', f.db, 'strategy', 'show', '-f', 'json']).stdout };
    for (const args of [['strategy', 'resume'], ['strategy', 'pause'], ['strategy', 'abort'], ['strategy', 'update', '--stage', '9', '--max-parallel-subclouds', '3']]) {
      expect(dcmQuick(['--db', f.db, ...args], { env: as('mallory') }).code).toBe(1);
    }
    expect(dcmQuick(['--db', f.db, 'strategy', 'update', '--max-parallel-subclouds', '0'], { env: as('mallory') }).code).toBe(2);
    expect({ events: events(), strategy: dcmQuickOk(['--db', f.db, 'strategy', 'show', '-f', 'json']).stdout }).toEqual(before);

    const third = dcm(['--db', f.db, 'strategy', 'apply'], { env: as('bob') });
    expect(third.code).toBe(0);

    const ev = events();
    const secondPid = second.child.pid!;
    expect(ev.map((e) => [e.event, e.user])).toEqual([
      ['apply started', 'bob'],
      ['paused', 'alice'],
      ['updated', 'alice'],
      ['resumed', 'alice'],
      ['apply started', 'carol'],
      // On a PostgreSQL store each apply is a worker, which takes over one that is gone (README "Several hosts").
      [isPgUrl(f.db) ? 'worker taken over' : 'lock taken over', 'carol'],
      ['runs adopted', 'carol'],
      ['abort requested', 'dave'],
      ['apply ended', 'carol'],
      ['retried', 'erin'],
      ['apply started', 'bob'],
      ['apply ended', 'bob'],
    ]);
    expect(ev.every((e) => e.host === HOST)).toBe(true);
    // In the order they happened.
    expect(ev.map((e) => e.time)).toEqual([...ev.map((e) => e.time)].sort());
    const byEvent = (i: number) => ev[i];
    expect(byEvent(0)).toMatchObject({ pid: firstPid, details: 'initial -> applying' });
    expect(byEvent(1).details).toBe('applying -> paused');
    expect(byEvent(2).details).toBe('max parallel subclouds: 1 -> 2; stage 1 window: 1 -> 2');
    expect(byEvent(3).details).toBe('paused -> applying');
    expect(byEvent(4)).toMatchObject({ pid: secondPid, details: 'resuming (state applying)' });
    expect(byEvent(5).details).toMatch(
      isPgUrl(f.db)
        ? new RegExp(`^pid ${firstPid} on ${HOST}: no longer running; \\d+ run\\(s\\) adopted, 0 interrupted$`)
        : new RegExp(`^took over the apply lock of pid ${firstPid} on ${HOST} \\(no longer running\\)$`),
    );
    expect(byEvent(6).details).toMatch(/^\d+ run\(s\) left going by the last apply adopted \(not run again\); \d+ cut off, run again$/);
    expect(byEvent(7).details).toBe(
      isPgUrl(f.db)
        ? `applying -> abort requested: its 1 worker(s) (pid ${secondPid} on ${HOST}) carry it out`
        : `applying -> abort requested: the orchestrator (pid ${secondPid} on ${HOST}) carries it out`,
    );
    expect(byEvent(8)).toMatchObject({ pid: secondPid, details: 'aborted (exit 3)' });
    expect(byEvent(9).details).toBe(`${reset.length} step(s): ${reset.join(', ')}`);
    expect(byEvent(11).details).toBe('complete (exit 0)');

    // Every format the other lists have.
    const value = dcmQuickOk(['--db', f.db, 'strategy', 'events', '-f', 'value', '-c', 'event', '-c', 'user']).stdout;
    expect(value.split('\n')[0]).toBe('apply started bob');
    const csv = dcmQuickOk(['--db', f.db, 'strategy', 'events', '-f', 'csv', '-c', 'pid', '-c', 'event', '--sort-column', 'event']).stdout.split('\n');
    expect(csv[0]).toBe('"event","pid"');
    expect(csv[1]).toMatch(/^"abort requested",\d+$/);
    const table = dcmQuickOk(['--db', f.db, 'strategy', 'events']).stdout;
    expect(table.split('\n')[1]).toMatch(/^\| time +\| event +\| user +\| host +\| +pid \| details +\| reason +\|$/);
    expect(dcmQuickOk(['--db', f.db, 'strategy', 'events', '-f', 'yaml']).stdout).toContain("- details: 'max parallel subclouds: 1 -> 2; stage 1 window: 1 -> 2'\n  event: updated\n");

    // The report: a labelled mark per event on the timeline, and the record in a table.
    const html = path.join(f.dir, 'report.html');
    dcmQuickOk(['--db', f.db, 'strategy', 'report', '--html', html]);
    await withChromium(async (browser) => {
      const o = await openFile(browser, html);
      expect(o.errors).toEqual([]);
      const marks = await o.page.evaluate(() =>
        [...document.querySelectorAll<SVGGElement>('.stage svg g.event-mark')].map((g) => ({
          event: g.dataset.event,
          label: g.querySelector('text')!.textContent,
          line: g.querySelector('line') !== null,
          tip: g.querySelector('title')!.textContent,
        })),
      );
      expect(marks.map((m) => m.event)).toEqual(ev.map((e) => e.event));
      expect(marks.every((m) => m.line && m.label === m.event)).toBe(true);
      expect(marks[1].tip).toContain('paused by alice@ops-host');
      const rows = await o.page.evaluate(() => [...document.querySelectorAll('#events tr.event')].map((tr) => tr.children[1].textContent));
      expect(rows).toEqual(ev.map((e) => e.event));
      await o.page.screenshot({ path: outputPath('report-events.png'), fullPage: true });
    });

    // The record belongs to the strategy: kept with it at delete (issue 34), read by its id; the
    // next one starts empty.
    const id = (JSON.parse(dcmQuickOk(['--db', f.db, 'strategy', 'list', '-f', 'json']).stdout) as { id: string }[])[0].id;
    const kept = [...eventNames(), 'deleted'];
    dcmQuickOk(['--db', f.db, 'strategy', 'delete']);
    expect(await withSql(f.db, (d) => d.prepare('SELECT count(*) FROM strategy_event').pluck().get())).toBe(0);
    expect(dcmQuickOk(['--db', f.db, 'strategy', 'events', '-f', 'value', '-c', 'event']).stdout).toBe('<none>\n');
    expect(dcmQuickOk(['--db', f.db, 'strategy', 'events', '--strategy', id, '-f', 'value', '-c', 'event']).stdout).toBe(
      `${kept.join('\n')}\n`,
    );
    if (!isPgUrl(f.db)) expect(fs.existsSync(f.db)).toBe(true);
  }, 120_000);

  test('a second apply refused (exit 4) records nothing; a Ctrl-C ends the apply with the strategy left applying, and says so', async () => {
    f = execFixture();
    dcmQuickOk(['--db', f.db, 'subcloud', 'add', ...names(4)]);
    dcmQuickOk(['--db', f.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '1', '--sim-latency', '100ms..200ms']);
    const apply = spawnDcm(['--db', f.db, 'strategy', 'apply', '-v'], as('bob'));
    await waitFor(() => eventNames().includes('apply started') && apply.stderr().includes(' -> '), 20_000, 5);
    // A file has one orchestrator; on a PostgreSQL store a second apply would join as a worker (workers.test.ts).
    if (!isPgUrl(f.db)) {
      const again = dcm(['--db', f.db, 'strategy', 'apply'], { env: as('mallory') });
      expect(again.code).toBe(4);
      expect(eventNames()).toEqual(['apply started']);
    }
    apply.child.kill('SIGINT');
    expect((await apply.done).code).toBe(130);
    const ev = events();
    expect(ev.map((e) => [e.event, e.user, e.pid])).toEqual([
      ['apply started', 'bob', apply.child.pid],
      ['apply ended', 'bob', apply.child.pid],
    ]);
    expect(ev[1].details).toBe('stopped by SIGINT (exit 130); the strategy stays applying');
  }, 60_000);
});
