/**
 * Several orchestrators on one strategy, on the PostgreSQL pass's server (test/pg/workers*.test.ts):
 * workers as dcm processes (each its own `DCM_HOST` where it plays a host), the store read as the
 * server has it, and what a worker that never ends was doing.
 */
import { afterAll } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcmSpawn, sleep } from './cli.js';
import type { ExecFixture } from './exec.js';
import { dcmQuickOk } from './quick.js';
import { SyncPg } from './sync-pg.js';

/** Debian's libfaketime (package faketime; .ci/run installs it): a process with its wall clock moved. */
export const FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

const children: { child: { pid?: number; kill: (s: NodeJS.Signals) => boolean } }[] = [];

/** Every worker a test started, continued if stopped and killed (a test's afterEach). */
export function stopWorkers(): void {
  for (const c of children.splice(0)) {
    try {
      c.child.kill('SIGCONT');
      c.child.kill('SIGKILL');
    } catch {
      // gone
    }
  }
}

export const names = (n: number, prefix = 's') => Array.from({ length: n }, (_, i) => `${prefix}${String(i + 1).padStart(3, '0')}`);

/**
 * One connection per database for the test's reads, kept for the file: a test polls the store
 * every few tens of milliseconds while workers run, and a connection each time (a thread loading
 * node-postgres, a server process forked) cost more CPU than the workers it watched.
 */
const readers = new Map<string, SyncPg>();
afterAll(() => {
  for (const pg of readers.values()) pg.close();
  readers.clear();
});

/** A connection the server ended or lost (a test cuts them, or restarts the server): read again on a new one. */
const lostConnection = (err: unknown) => {
  const code = (err as { code?: string }).code;
  // No SQLSTATE (the connection ended), a socket's errno (ECONNRESET), or the server's word for it
  // (08…: connection exception; 57…: operator intervention, pg_terminate_backend or a shutdown).
  return code === undefined || /^E[A-Z]+$/.test(code) || code.startsWith('08') || code.startsWith('57');
};

export function query<T>(db: string, text: string, values: unknown[] = []): T[] {
  for (let attempt = 1; ; attempt++) {
    let pg = readers.get(db);
    if (!pg) readers.set(db, (pg = new SyncPg(db)));
    try {
      return pg.query(text, values).rows as T[];
    } catch (err) {
      readers.delete(db);
      pg.close();
      if (attempt > 1 || !lostConnection(err)) throw err;
    }
  }
}

/** Every row of the store's own tables (not the sim's far side), table by table. */
export function storeRows(db: string): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const { t } of query<{ t: string }>(db, `SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)) {
    out[t] = query(db, `SELECT * FROM ${t} ORDER BY 1`);
  }
  return out;
}

/** A worker with a 2 s lease; quiet unless it is asked for progress lines. */
export function worker(db: string, env: Record<string, string>, ...args: string[]) {
  const quiet = args.includes('--progress-interval') ? [] : ['-q'];
  const w = dcmSpawn(['--db', db, 'strategy', 'apply', ...quiet, '--lease', '2s', ...args], env, { detached: true });
  children.push(w);
  return w;
}

export function setup(db: string, n: number, window: number, yaml: string, fx: ExecFixture, ...more: string[]): void {
  dcmQuickOk(['--db', db, 'subcloud', 'add', ...names(n)]);
  dcmQuickOk(['--db', db, 'strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', String(window), '--driver', 'exec', '--exec-config', fx.config(yaml), ...more]);
}

/** An exec config: every state runs the fixture's step.sh, which takes min..max ms and logs the run. */
export const everyState = (fx: ExecFixture, minMs: number, maxMs: number) => `
defaults: {env: {STEP_MIN_MS: "${minMs}", STEP_MAX_MS: "${maxMs}"}}
states:
  "*": [${fx.step}, "{cloud}", "{state}"]
`;

/** The process is stopped (SIGSTOP): its state in /proc is T. */
export const stopped = (pid: number) => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').startsWith('T');

/** How many times each (site, state) ran, by the runs' own log. */
export function runsPerState(runs: readonly { cloud: string; state: string }[]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const r of runs) seen.set(`${r.cloud}|${r.state}`, (seen.get(`${r.cloud}|${r.state}`) ?? 0) + 1);
  return seen;
}

/** Runs `running` in the history whose process is recorded (launched, not only committed). */
export const runsWithPid = (db: string) => query<{ n: number }>(db, `SELECT count(*) AS n FROM step_history WHERE outcome = 'running' AND pid IS NOT NULL`)[0].n;

/**
 * What a loop whose workers did not end leaves to read: each live worker's stderr and JavaScript
 * stack (Node's report, asked for by SIGUSR2), the workers the store knows, the steps not complete.
 */
export async function explainHang(db: string, reports: string, pool: readonly { child: { pid?: number; kill: (s: NodeJS.Signals) => boolean }; stderr: () => string; ended: unknown }[]): Promise<string> {
  const out: string[] = [];
  for (const w of pool.filter((p) => p.ended === null)) {
    w.child.kill('SIGCONT');
    w.child.kill('SIGUSR2');
  }
  await sleep(3_000);
  for (const w of pool.filter((p) => p.ended === null)) {
    out.push(`worker pid ${w.child.pid}, stderr:\n${w.stderr().slice(-4_000)}`);
    const file = fs.existsSync(reports) ? fs.readdirSync(reports).find((n) => n.includes(`.${w.child.pid}.`)) : undefined;
    if (file) {
      const r = JSON.parse(fs.readFileSync(path.join(reports, file), 'utf8')) as { javascriptStack?: { stack?: string[] } };
      out.push(`its stack:\n${(r.javascriptStack?.stack ?? []).join('\n')}`);
    }
  }
  out.push(`apply_worker: ${JSON.stringify(query(db, 'SELECT * FROM apply_worker'))}`);
  out.push(`strategy: ${JSON.stringify(query(db, 'SELECT state FROM strategy'))}`);
  out.push(`steps not complete: ${JSON.stringify(query(db, `SELECT * FROM strategy_step WHERE state <> 'complete' ORDER BY 1`))}`);
  out.push(`runs running: ${JSON.stringify(query(db, `SELECT * FROM step_history WHERE outcome = 'running' ORDER BY 1`))}`);
  return out.join('\n');
}

export const stepStates = (db: string) => query<{ state: string; n: number }>(db, 'SELECT state, count(*) AS n FROM strategy_step GROUP BY state ORDER BY state');

/** The launchers of the runs whose files are under `logs` (each run's `.pid`: its pid, then its launcher's). */
export function launcherPids(logs: string): Set<number> {
  return new Set(
    (fs.readdirSync(logs, { recursive: true }) as string[])
      .filter((n) => n.endsWith('.pid'))
      .map((n) => Number(fs.readFileSync(path.join(logs, n), 'utf8').trim().split(/\s+/)[1])),
  );
}
