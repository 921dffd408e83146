/**
 * The scenario of the crash-point and busy-point loops (issue 14): a 20-subcloud exec apply with
 * a retry, a timeout, `$DCM_NEXT` skips, a pause and resume and a window change in it, each made
 * deterministic by having state commands of particular subclouds do it themselves (`dcm strategy
 * pause`, `resume`, `update` against `$DCM_DB`). The same fleet with the sim driver, for the sim
 * loop. Each point of a loop starts from a fresh database.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { statesOf } from '../../src/domain/types.js';
import { BIN, dcm, tempDir, waitFor, type RunResult } from './cli.js';
import { history, names, okRunProblems, spawnDcm, steps, strategyState } from './history.js';
import { readRuns as readRunsAt, type Run } from './exec.js';
import { strategyLayout } from './logs.js';
import { runBase } from '../../src/domain/logs.js';
import { dcmQuickOk } from './quick.js';
import { judgeRuns, readStarts as readStartsAt, seamFixture, type SeamFixture } from './seams.js';

export const PATCH = statesOf('patch');
export const CLOUDS = names(20);
export const WINDOW = 5;
/** The window s5's pre check sets. */
export const SMALLER = 3;

/** Where each subcloud ends up, and which states it runs (the skips of $DCM_NEXT). */
export const EXPECTED: Record<string, { state: string; states: string[] }> = Object.fromEntries(
  CLOUDS.map((c) => [
    c,
    {
      state: 'complete',
      states: c === 's11' ? [PATCH[0]] : c === 's13' ? [PATCH[0], PATCH[4]] : PATCH,
    },
  ]),
);

/**
 * What each run does, by subcloud and state (the body seam.sh runs). dcm commands run with the
 * test hooks removed from their environment, so only the apply under test crashes or finds the
 * file busy.
 */
function body(abortBy?: string): string {
  const dcmCmd = `env -u DCM_TEST_HOOKS -u DCM_CRASH_AFTER_COMMIT -u DCM_BUSY_AT_COMMIT "${process.execPath}" "${BIN}" --db "$DCM_DB"`;
  return `#!/bin/sh
case "$DCM_CLOUD/$DCM_STATE/$DCM_ATTEMPT" in
  "s3/pre check/"*) ${dcmCmd} strategy pause >/dev/null 2>&1 || true
    # With $APPLY_ERR (the apply's stderr, as it comes): the resume (s3's third state) waits until
    # the apply has said it saw the pause. A pause and a resume that both come between two of its
    # polls are rightly one non-event, and a test that asks for both to be seen would flake.
    i=0
    while [ -n "$APPLY_ERR" ] && [ $i -lt 150 ] && ! grep -q 'paused: no new subcloud starts' "$APPLY_ERR" 2>/dev/null; do sleep 0.1; i=$((i+1)); done ;;
  # The resume in the state after: updating patches has s9's timeout of 2 s, and a dcm that starts
  # on a busy machine and then finds the file held busy (the busy points hold it 3 s) takes longer.
  # (Not in the background: a run's processes left behind when it ends are stopped.)
  "s3/creating VIM patch strategy/"*) ${dcmCmd} strategy resume >/dev/null 2>&1 || true ;;
  "s5/pre check/"*) ${dcmCmd} strategy update --max-parallel-subclouds ${SMALLER} >/dev/null 2>&1 || true ;;
  "s7/pre check/1") echo "s7 fails once" >&2; exit 1 ;;
  "s9/updating patches/1") exec sleep 30 ;;
  "s11/pre check/"*) echo complete > "$DCM_NEXT" ;;
  "s13/pre check/"*) echo "finishing patch strategy" > "$DCM_NEXT" ;;
${abortBy ? `  "${abortBy}/pre check/"*) ${dcmCmd} strategy abort >/dev/null 2>&1 || true ;;
` : ''}esac
sleep 0.02
exit 0
`;
}

export interface Scenario {
  f: SeamFixture;
  /** A fresh database in its own folder (its runs' files there too); returns its path. */
  fresh(n: number): string;
}

/**
 * The scenario's files (state commands, config) once; each point gets a fresh database of its own
 * with the fleet and the strategy, and its own run folder (a copied database would share the
 * template's: the log folder is fixed at create, and a later point would find an earlier point's
 * `.status` files there). With `abortBy`, that subcloud's pre check aborts the strategy.
 */
export function execScenario(abortBy?: string): Scenario {
  const f = seamFixture();
  const script = path.join(f.dir, 'scenario.sh');
  fs.writeFileSync(script, body(abortBy), { mode: 0o755 });
  const cfg = f.config(`
defaults: {kill_grace: 300ms, timeout: 20s}
states:
  pre check: {run: [${f.seam}, "${script}"], retries: 1, backoff: 50ms..50ms}
  updating patches: {run: [${f.seam}, "${script}"], retries: 1, backoff: 50ms..50ms, timeout: 2s}
  "*": [${f.seam}, "${script}"]
`);
  const fresh = (n: number) => {
    const d = path.join(f.dir, `point-${n}`);
    fs.rmSync(d, { recursive: true, force: true });
    fs.mkdirSync(d);
    const db = path.join(d, 'dcm.db');
    dcmQuickOk(['--db', db, 'subcloud', 'add', ...CLOUDS]);
    dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', String(WINDOW), '--driver', 'exec', '--exec-config', cfg,
      '--log-dir', path.join(d, 'logs')]);
    return db;
  };
  return { f, fresh };
}

/** The same fleet with the sim driver; s7 fails in its second state. */
export function simScenario(): { dir: string; db: string; cleanup: () => void; fresh(n: number): string } {
  const t = tempDir('dcm-sim-points-');
  dcmQuickOk(['--db', t.db, 'subcloud', 'add', ...CLOUDS]);
  dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', String(WINDOW), '--sim-latency', '10ms..30ms',
    '--sim-fail', `s7=${PATCH[1]}`]);
  return { ...t, fresh: (n) => copyTemplate(t.db, t.dir, n) };
}

function copyTemplate(db: string, dir: string, n: number): string {
  const d = path.join(dir, `point-${n}`);
  fs.rmSync(d, { recursive: true, force: true });
  fs.mkdirSync(d);
  const to = path.join(d, 'dcm.db');
  // The template is never open while copied: no -wal to take along (dcm checkpoints on close).
  for (const ext of ['', '-wal', '-shm']) if (fs.existsSync(db + ext)) fs.copyFileSync(db + ext, to + ext);
  // Each point its own run-log folder: the copies hold one strategy (the same run ids), and a
  // status left by an earlier point would rightly be taken for the run it names.
  const c = new Database(to);
  try {
    c.prepare(`UPDATE strategy SET extra_args = json_set(extra_args, '$.log_dir', ?) WHERE json_extract(extra_args, '$.log_dir') IS NOT NULL`).run(path.join(d, 'logs'));
  } finally {
    c.close();
  }
  return to;
}

export const hooks = (extra: Record<string, string>): Record<string, string> => ({ DCM_TEST_HOOKS: '1', ...extra });

/** Apply (in the background, so that a test can watch), resolving with how it ended. */
export async function apply(db: string, env: Record<string, string>): Promise<RunResult> {
  // Its own process group: whatever it signals, the test runner is not in it. Its stderr is also
  // copied to $APPLY_ERR when set (see s3's pre check).
  return spawnDcm(['--db', db, 'strategy', 'apply'], env, { detached: true, stderrFile: env.APPLY_ERR }).done;
}

const ENDED: Record<string, number> = { complete: 0, failed: 1, aborted: 3 };

/**
 * After a crash: plain `dcm strategy apply` until one exits by itself (not killed), at most `max`
 * tries. A crash after the commit that ended the strategy leaves nothing to resume: its exit code
 * is then the ended strategy's.
 */
export async function applyUntilDone(db: string, env: Record<string, string>, max = 10): Promise<{ code: number | null; stderr: string; tries: number }> {
  let tries = 0;
  for (;;) {
    const state = strategyState(db);
    if (state in ENDED) return { code: ENDED[state], stderr: `(strategy ${state})`, tries };
    if (tries >= max) return { code: null, stderr: `still ${state} after ${tries} applies`, tries };
    tries++;
    const r = await apply(db, env);
    if (r.signal === null) return { code: r.code, stderr: r.stderr, tries };
  }
}

/**
 * What is wrong with the exec scenario's end, judged by its run log and its steps. With `aborted`,
 * a step may also end `aborted` (the abort found it not started): it must then never have run.
 */
export async function execProblems(runs: string, db: string, aborted = false): Promise<string[]> {
  const ended = readRunsAt(runs).map((r) => ({ ...r, code: r.args }));
  const starts = readStartsAt(`${runs}.starts`);
  const finished = await finishedRuns(db);
  const problems = judgeRuns(ended, starts, WINDOW, finished).map((p) => `run log: ${p}`);
  // Every (subcloud, state) the scenario walks exited 0 exactly once; nothing else exited 0.
  const ok = new Map<string, number>();
  for (const r of ended) if (r.code === '0' && finished(r)) ok.set(`${r.cloud}/${r.state}`, (ok.get(`${r.cloud}/${r.state}`) ?? 0) + 1);
  const final = new Map(steps(db).map((st) => [st.cloud, st]));
  const wasAborted = (c: string) => aborted && final.get(c)?.state === 'aborted';
  for (const [c, e] of Object.entries(EXPECTED)) {
    if (wasAborted(c)) {
      const ran = starts.filter((x) => x.cloud === c);
      if (ran.length) problems.push(`run log: ${c} is aborted (never started) yet ran ${ran.map((x) => x.state).join(', ')}`);
      continue;
    }
    for (const s of e.states) if (ok.get(`${c}/${s}`) !== 1) problems.push(`run log: ${c}/${s} exited 0 ${ok.get(`${c}/${s}`) ?? 0} times`);
  }
  for (const k of ok.keys()) {
    const [c, s] = k.split('/');
    if (!EXPECTED[c]?.states.includes(s)) problems.push(`run log: ${k} ran, the scenario skips it`);
  }
  for (const [c, st] of final) if (st.state !== EXPECTED[c].state && !wasAborted(c)) problems.push(`step ${c}: ${st.state} (${st.details})`);
  return problems;
}

/**
 * Whether a run that logged exit 0 finished as far as dcm could know. One whose timeout's kill
 * came as it ended did not: dcm recorded the attempt `timeout`, and its wrapper, killed with it,
 * wrote no `.status` (a status would mean the command had exited by itself, and a timeout then
 * is dcm's fault). Such an attempt runs again, as its retries say.
 */
async function finishedRuns(db: string): Promise<(r: Run) => boolean> {
  const logs = await strategyLayout(db);
  const timedOut = new Set(history(db).filter((h) => h.outcome === 'timeout').map((h) => `${h.cloud}/${h.state}/${h.attempt}`));
  return (r) => !timedOut.has(`${r.cloud}/${r.state}/${r.attempt}`) || fs.existsSync(`${runBase(logs, r.cloud, r.attempt, r.state)}.status`);
}

/** What is wrong with the sim scenario's end: the simulated sites' verdict, one ok run per state. */
export function simProblems(db: string): string[] {
  const problems: string[] = [];
  for (const st of steps(db)) {
    const want = st.cloud === 's7' ? 'failed' : 'complete';
    if (st.state !== want) problems.push(`step ${st.cloud}: ${st.state} (${st.details})`);
    // A duplicate or out-of-order operation fails at the site with `unexpected state …`.
    if (st.cloud === 's7' && st.details !== `${PATCH[1]}: injected failure`) problems.push(`s7 failed for another reason: ${st.details}`);
  }
  const h = history(db);
  problems.push(...okRunProblems(h, CLOUDS.filter((c) => c !== 's7'), PATCH));
  const bad = h.filter((r) => /unexpected state/.test(r.details ?? ''));
  for (const r of bad) problems.push(`${r.cloud} / ${r.state}: ${r.details}`);
  return problems;
}

/** Processes of the test left (the launchers of killed applies end with their last run: wait for it, bounded). */
export async function noneLeft(f: Pick<SeamFixture, 'leftovers'>): Promise<number[]> {
  try {
    await waitFor(() => f.leftovers().length === 0, 15_000, 50);
  } catch {
    // reported below
  }
  return f.leftovers();
}

/** `dcm strategy apply` with a hook but without DCM_TEST_HOOKS: refused, exit 2. */
export function refusedWithoutHooks(db: string, name: string, value: string): RunResult {
  return dcm(['--db', db, 'strategy', 'apply'], { env: { [name]: value } });
}
