/**
 * A schedule: everything one simulated rollout will meet, drawn from its seed — the fleet and its
 * stages, how long each state takes on each site and how it ends (ok, failed, the site not
 * answering), and the faults: kills at commit boundaries, a store held busy, Ctrl-C, operator
 * commands (pause, resume, window, abort, retry), and with several hosts, workers frozen past
 * their lease or killed; on a PostgreSQL server also dcm's sessions cut by the server, and its
 * store held busy past the lease. Plain data: printed, shrunk by dropping faults, and replayed.
 */
import { Prng } from './prng.js';
import type { Plan } from './sites.js';

export type Fault =
  /** One host: the process of generation `gen` is killed right after its commit `commit`, and a new apply starts `restartMs` later. */
  | { kind: 'kill'; gen: number; commit: number; restartMs: number }
  /** The commit `commit` of generation `gen` (on a server, worker `gen - 1`'s first) finds the store held by another connection for `holdMs`. */
  | { kind: 'busy'; gen: number; commit: number; holdMs: number }
  | { kind: 'pause'; atMs: number; forMs: number }
  | { kind: 'window'; atMs: number; size: number }
  | { kind: 'abort'; atMs: number }
  /** Ctrl-C (twice: a second one stops waiting); the operator applies again `restartMs` later. */
  | { kind: 'interrupt'; atMs: number; twice: boolean; restartMs: number }
  /** Several hosts: worker `worker` is frozen (SIGSTOP) for `forMs`, or killed and started again on its host. */
  | { kind: 'freeze'; worker: number; atMs: number; forMs: number }
  | { kind: 'kill-worker'; worker: number; atMs: number; restartMs: number }
  /** A PostgreSQL server: every session of dcm's is ended by the server (pg_terminate_backend), as in its restart. */
  | { kind: 'cut'; atMs: number };

export interface Schedule {
  seed: number;
  /** 1: one orchestrator at a time (a file); more: that many workers, each on a host of its own. */
  hosts: number;
  /** Each stage: its window and its number of sites (a group of its own). */
  stages: { window: number; sites: number }[];
  stateTimeoutMs: number;
  leaseMs: number;
  pFail: number;
  pDefer: number;
  /** After the strategy ends failed or aborted, `strategy retry` and apply again (once). */
  retry: boolean;
  faults: Fault[];
}

export interface DrawOptions {
  /** Several hosts (2 or 3 workers); absent: drawn (a third of the schedules). */
  hosts?: number;
  /**
   * On a PostgreSQL server: several hosts always (2 or 3 when not given; a server's one host is
   * workers whose processes that host sees, which the simulator's are not), sessions cut, and a
   * busy store. A seed whose schedule on a file has several hosts draws the same one here, then these.
   */
  server?: boolean;
}

export function drawSchedule(seed: number, o: DrawOptions = {}): Schedule {
  const r = new Prng(seed);
  const hosts = o.hosts ?? (r.chance(1 / 3) || o.server ? r.int(2, 3) : 1);
  const stages = Array.from({ length: r.int(1, 3) }, () => ({ window: r.int(1, 6), sites: r.int(2, 10) }));
  const faults: Fault[] = [];
  const horizonMs = 10 * 60_000;
  const at = () => r.int(1_000, horizonMs);
  if (hosts === 1) {
    for (let gen = 1; gen <= 3; gen++) {
      if (r.chance(0.6)) faults.push({ kind: 'kill', gen, commit: r.int(1, 40), restartMs: r.int(1_000, 120_000) });
      if (r.chance(0.3)) faults.push({ kind: 'busy', gen, commit: r.int(1, 40), holdMs: r.int(500, 20_000) });
    }
    if (r.chance(0.2)) faults.push({ kind: 'interrupt', atMs: at(), twice: r.chance(0.5), restartMs: r.int(1_000, 60_000) });
  } else {
    const n = r.int(1, 3);
    for (let i = 0; i < n; i++) {
      const worker = r.int(0, hosts - 1);
      if (r.chance(0.5)) faults.push({ kind: 'freeze', worker, atMs: at(), forMs: r.int(5_000, 90_000) });
      else faults.push({ kind: 'kill-worker', worker, atMs: at(), restartMs: r.int(1_000, 60_000) });
    }
  }
  if (r.chance(0.3)) faults.push({ kind: 'pause', atMs: at(), forMs: r.int(1_000, 120_000) });
  if (r.chance(0.3)) faults.push({ kind: 'window', atMs: at(), size: r.int(1, 8) });
  if (r.chance(0.2)) faults.push({ kind: 'abort', atMs: at() });
  const s: Schedule = {
    seed,
    hosts,
    stages,
    stateTimeoutMs: 120_000,
    leaseMs: 15_000,
    pFail: r.pick([0, 0.02, 0.08]),
    pDefer: r.pick([0, 0, 0.05]),
    retry: r.chance(0.7),
    faults,
  };
  // Drawn last, so that everything above is the schedule the same seed has on a file. A server's
  // busy store may be held past the lease: the workers' leases are renewed on connections of
  // their own, never behind the writers' lock, and nobody is taken for gone for that wait.
  if (o.server) {
    for (let i = r.int(0, 2); i > 0; i--) faults.push({ kind: 'cut', atMs: at() });
    if (r.chance(0.5)) faults.push({ kind: 'busy', gen: r.int(1, hosts), commit: r.int(1, 40), holdMs: r.int(500, 30_000) });
  }
  return s;
}

/** How each (site, state, attempt) goes: drawn from the schedule's seed in the order operations reach the sites. */
export function planner(s: Schedule): (site: string, state: string, attempt: number) => Plan {
  const r = new Prng(s.seed ^ 0x5bd1e995);
  return () => {
    const long = r.chance(0.01);
    const durationMs = long ? s.stateTimeoutMs + r.int(1_000, 60_000) : r.int(1_000, 30_000);
    const x = r.next();
    return { durationMs, outcome: x < s.pFail ? 'failed' : x < s.pFail + s.pDefer ? 'defer' : 'ok' };
  };
}

/** Schedules smaller than `s`: each with one fault fewer (the shrinker keeps the first that still fails). */
export function smaller(s: Schedule): Schedule[] {
  const out = s.faults.map((_, i) => ({ ...s, faults: s.faults.filter((_, j) => j !== i) }));
  if (s.retry) out.push({ ...s, retry: false });
  for (const [i, st] of s.stages.entries()) if (st.sites > 1) out.push({ ...s, stages: s.stages.map((x, j) => (j === i ? { ...x, sites: x.sites - 1 } : x)) });
  if (s.stages.length > 1) out.push({ ...s, stages: s.stages.slice(0, -1) });
  return out;
}
