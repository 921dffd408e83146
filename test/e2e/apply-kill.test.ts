/**
 * kill -9 at random moments (SPEC §1, §6): nothing committed is lost, the file stays sound, and
 * resume runs again only the operations that were running at a kill, as their next attempt.
 * The sim driver judges by the subcloud's own side: a state run twice, or out of order, would
 * fail with `unexpected state …`, so "every step complete" is itself a check.
 */
import { describe, expect, test } from '@jest/globals';
import Database from 'better-sqlite3';
import { statesOf } from '../../src/domain/types.js';
import { dcm, sleep, waitFor } from '../helpers/cli.js';
import { withSites } from '../helpers/fleet.js';
import { countBy, createFleet, history, names, okRunProblems, runsByCloudState, steps, strategyState, spawnDcm, tempPerTest } from '../helpers/history.js';

const PATCH = statesOf('patch');

interface Case {
  n: number;
  window: number;
  latency: string;
  kills: number;
  /** Extra random delay after the first transition line before the kill, in ms. */
  spreadMs: number;
}

const CASES: Case[] = [
  { n: 300, window: 50, latency: '20ms..80ms', kills: 10, spreadMs: 200 },
  // DCM_BIG_TESTS: near-zero latency, so that kills land on commit boundaries far more often.
  ...(process.env.DCM_BIG_TESTS
    ? [{ n: 5000, window: 500, latency: '0..3ms', kills: 30, spreadMs: 60 }]
    : []),
];

const temp = tempPerTest();

/** The history rows left `running`, as cloud / state / attempt keys; and the file's integrity. */
function inspect(file: string): { running: string[]; integrity: string } {
  const db = new Database(file, { readonly: true });
  try {
    const running = db
      .prepare(
        `SELECT sc.name AS cloud, h.state, h.attempt FROM step_history h JOIN strategy_step st ON st.id = h.step_id
         JOIN subcloud sc ON sc.id = st.subcloud_id WHERE h.outcome = 'running'`,
      )
      .all() as { cloud: string; state: string; attempt: number }[];
    const integrity = db.pragma('integrity_check', { simple: true }) as string;
    return { running: running.map((r) => `${r.cloud}/${r.state}/${r.attempt}`), integrity };
  } finally {
    db.close();
  }
}

describe('apply: kill -9 and resume', () => {
  // Claim, README "Your data", kill -9: a killed apply loses nothing it committed; `dcm strategy apply` resumes it and
  // only the operations that were in flight run again; the file passes its integrity check afterwards.
  test.each(CASES)('$n subclouds, window $window, $latency: SIGKILLed $kills+ times at random moments, resumed until it ends', async (c) => {
    const { n: N, window: WINDOW, kills: KILLS } = c;
    const t = temp();
    createFleet(t.db, names(N), ['--max-parallel-subclouds', String(WINDOW), '--sim-latency', c.latency]);

    const runningAtKill = new Set<string>();
    let kills = 0;
    let takeovers = 0;
    let resumes = 0;
    const stderrs: string[] = [];
    let final: { code: number | null; stderr: string } | null = null;
    for (let round = 0; round < 4 * KILLS + 20 && !final; round++) {
      const apply = spawnDcm(['--db', t.db, 'strategy', 'apply', '-v']);
      const last = kills >= KILLS;
      if (!last) {
        // A random moment once the orchestrator is under way: as its first transition line shows,
        // or any time up to spreadMs later.
        const lines = () => (apply.stderr().match(/ -> /g) ?? []).length;
        try {
          await waitFor(() => lines() > 0 || apply.child.exitCode !== null, 20_000, 2);
        } catch {
          /* fall through: kill anyway */
        }
        await sleep(Math.floor(Math.random() * c.spreadMs));
        apply.child.kill('SIGKILL');
      }
      const r = await apply.done;
      stderrs.push(r.stderr);
      if (r.stderr.includes('took over the apply lock')) takeovers++;
      if (r.stderr.includes('resuming the patch strategy')) resumes++;
      if (r.signal === 'SIGKILL') {
        kills++;
        const seen = inspect(t.db);
        expect(seen.integrity).toBe('ok');
        expect(seen.running.length).toBeLessThanOrEqual(WINDOW);
        for (const k of seen.running) runningAtKill.add(k);
      } else {
        final = { code: r.code, stderr: r.stderr };
      }
    }
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    expect(final).not.toBeNull();
    expect(final!.code).toBe(0);
    expect(final!.stderr).toMatch(new RegExp(`strategy complete: ${N} complete`));
    for (const e of stderrs) expect(e).not.toMatch(/unexpected state|error:/);
    expect(takeovers).toBeGreaterThanOrEqual(KILLS - 1);
    expect(resumes).toBeGreaterThanOrEqual(KILLS - 1);

    expect(inspect(t.db).integrity).toBe('ok');
    expect(strategyState(t.db)).toBe('complete');
    expect(countBy(steps(t.db), (s) => s.state)).toEqual({ complete: N });

    const runs = history(t.db);
    expect(okRunProblems(runs, names(N), PATCH)).toEqual([]);
    // A state ran again only if it was running at a kill; its earlier runs read `interrupted`,
    // attempts count up from 1, and the last one is the ok one.
    const interrupted = runs.filter((h) => h.outcome === 'interrupted').map((h) => `${h.cloud}/${h.state}/${h.attempt}`);
    expect(new Set(interrupted)).toEqual(runningAtKill);
    expect(interrupted.length).toBe(runningAtKill.size);
    expect(runningAtKill.size).toBeGreaterThan(0);
    for (const list of runsByCloudState(runs).values()) {
      expect(list.map((h) => h.attempt)).toEqual(list.map((_, i) => i + 1));
      expect(list.map((h) => h.outcome)).toEqual([...Array(list.length - 1).fill('interrupted'), 'ok']);
    }
    expect(runs.every((h) => ['ok', 'interrupted'].includes(h.outcome))).toBe(true);
    // The resumed runs were reported on stderr.
    expect(stderrs.some((e) => /operation\(s\) were interrupted and will run again/.test(e))).toBe(true);
    // Nothing ran again, apart from the interrupted runs.
    expect(runs.length).toBe(N * PATCH.length + interrupted.length);
    // The sim driver's own record agrees: every site finished every state.
    const sites = await withSites(t.db, async (d) => await d.prepare('SELECT done, vim, busy_state FROM sim_site').all() as { done: number; vim: string; busy_state: string | null }[]);
    expect(sites).toHaveLength(N);
    expect(sites.every((s) => s.done === PATCH.length - 1 && s.vim === 'applied' && s.busy_state === null)).toBe(true);
    // Exit of a sane resume on an ended strategy.
    expect(dcm(['--db', t.db, 'strategy', 'apply']).code).toBe(1);
  });
});
