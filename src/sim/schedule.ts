/**
 * A schedule: everything one simulated rollout will meet, drawn from its seed. The fleet and its
 * stages; how each state goes at each site (sites.ts draws that from the seed and the run's key,
 * not from here); and the faults, each at its moment within the schedule's fault horizon: kills at
 * commits, stores held busy, Ctrl-C, operator commands, and with several hosts, workers frozen or
 * killed, hosts paused, cut off from the store or lost with everything on them, hosts' clocks
 * stepped; on a PostgreSQL server also sessions cut by the server and a commit's answer lost.
 *
 * After the horizon comes the quiet: no new fault, frozen hosts continued, cut ones back; the
 * operator does what a person at 3 a.m. does (applies again, resolves runs of unknown outcome as
 * the site says they ended), and every site must be ended within the bound the schedule computes
 * (liveness). Plain data: printed as JSON, shrunk by dropping faults, replayed (`--schedule FILE`).
 */
import { Prng } from './prng.js';

export type Fault =
  /** One host: the apply of generation `gen` is killed right after its commit `commit`, and started again `restartMs` later. */
  /** The apply of generation `gen` killed after its commit `commit`, started again `restartMs` later; the operator aborts `abortAfterMs` after the kill. */
  | { kind: 'kill'; gen: number; commit: number; restartMs: number; abortAfterMs?: number }
  /** Another session holds the store's writers for `holdMs` (`table`: LOCK TABLE from psql, on a server). */
  | { kind: 'busy'; atMs: number; holdMs: number; table: boolean }
  | { kind: 'pause'; atMs: number; forMs: number }
  | { kind: 'window'; atMs: number; size: number }
  | { kind: 'abort'; atMs: number }
  /** Ctrl-C to every apply (twice: a second one stops waiting); the operator applies again `restartMs` later. */
  | { kind: 'interrupt'; atMs: number; twice: boolean; restartMs: number }
  /** Several hosts: worker `worker`'s process alone is frozen (SIGSTOP) for `forMs`, or killed and started again on its host. */
  | { kind: 'freeze'; worker: number; atMs: number; forMs: number }
  | { kind: 'kill-worker'; worker: number; atMs: number; restartMs: number }
  /** Several hosts: host `host` (its worker, its launcher and its runs) paused for `forMs`: a VM paused. */
  | { kind: 'freeze-host'; host: number; atMs: number; forMs: number }
  /** Several hosts: host `host` cut off from the store for `forMs` (a partition); the sites still answer it. */
  | { kind: 'cut-host'; host: number; atMs: number; forMs: number }
  /** Several hosts: host `host` lost with everything on it, for good. */
  | { kind: 'lose-host'; host: number; atMs: number }
  /** Host `host`'s wall clock stepped by `byMs` (NTP, an operator). */
  | { kind: 'clock-step'; host: number; atMs: number; byMs: number }
  /** The operator looks at the runs of unknown outcome now, mid-rollout, and resolves or retries each as its site says. */
  | { kind: 'resolve'; atMs: number }
  /** A PostgreSQL server ends dcm's sessions (`host`: that host's only), as in its restart. */
  | { kind: 'cut'; atMs: number; host: number | null }
  /** A PostgreSQL server: the answer of a COMMIT of host `host`'s worker is lost with its connection. */
  | { kind: 'commit-lost'; atMs: number; host: number }
  /** `strategy update --start-rate N/min` mid-rollout. */
  | { kind: 'rate'; atMs: number; perMin: number };

export interface Schedule {
  seed: number;
  /** 1: one orchestrator at a time (a file's lock); more: that many workers, each on a host of its own. */
  hosts: number;
  /** Each stage: its window and its number of sites (a group of its own). */
  stages: { window: number; sites: number }[];
  /** Each state's timeout; null: `timeout: none` (a run whose host is lost is held as of unknown outcome). */
  stateTimeoutMs: number | null;
  leaseMs: number;
  pFail: number;
  pDefer: number;
  /** A site that accepts an operation and never answers (only with a timeout: it ends the run). */
  pHang: number;
  /** After the strategy ends failed or aborted, `strategy retry` and apply again (once). */
  retry: boolean;
  /**
   * Several hosts: the states say `on_lost_host: rerun` (a run whose host is lost runs again at its
   * bound, at least once), and the sites check DCM_FENCE, as that opt-in requires: a run with an
   * older fence than one begun since is stopped there.
   */
  rerunOnLostHost: boolean;
  /**
   * `strategy create --start-rate N/min [--ramp F --ramp-after K]`: null, none. A schedule with a
   * rate steps no host's clock: the rate is kept on each host's clock, which must agree (NTP).
   */
  startRate: { perMin: number; factor: number; after: number | null } | null;
  /** Faults fall before this (virtual ms); the quiet comes after. */
  horizonMs: number;
  faults: Fault[];
}

export interface DrawOptions {
  /** Several hosts (2 or 3 workers); absent: drawn (a third of the schedules). */
  hosts?: number;
  /** On a PostgreSQL server: several hosts always, sessions cut, commits' answers lost. */
  server?: boolean;
}

export function drawSchedule(seed: number, o: DrawOptions = {}): Schedule {
  const r = new Prng(seed);
  const hosts = o.hosts ?? (r.chance(1 / 3) || o.server ? r.int(2, 3) : 1);
  const stages = Array.from({ length: r.int(1, 3) }, () => ({ window: r.int(1, 6), sites: r.int(2, 10) }));
  const faults: Fault[] = [];
  const horizonMs = 10 * 60_000;
  const at = () => r.int(1_000, horizonMs);
  const host = () => r.int(0, hosts - 1);
  const stateTimeoutMs = r.chance(0.15) ? null : 120_000;
  if (hosts === 1) {
    for (let gen = 1; gen <= 3; gen++) {
      if (r.chance(0.6)) faults.push({ kind: 'kill', gen, commit: r.int(1, 40), restartMs: r.int(1_000, 120_000) });
    }
    if (r.chance(0.2)) faults.push({ kind: 'interrupt', atMs: at(), twice: r.chance(0.5), restartMs: r.int(1_000, 60_000) });
  } else {
    const n = r.int(1, 4);
    for (let i = 0; i < n; i++) {
      const x = r.next();
      // Past the wait bound sometimes (a state's timeout is 2 min): the breaks of several hosts live there.
      const long = r.chance(0.3) ? r.int(150_000, 400_000) : r.int(5_000, 90_000);
      if (x < 0.25) faults.push({ kind: 'freeze', worker: host(), atMs: at(), forMs: long });
      else if (x < 0.45) faults.push({ kind: 'kill-worker', worker: host(), atMs: at(), restartMs: r.int(1_000, 60_000) });
      else if (x < 0.65) faults.push({ kind: 'freeze-host', host: host(), atMs: at(), forMs: long });
      else if (x < 0.85) faults.push({ kind: 'cut-host', host: host(), atMs: at(), forMs: long });
      else faults.push({ kind: 'lose-host', host: host(), atMs: at() });
    }
    if (r.chance(0.25)) faults.push({ kind: 'resolve', atMs: at() });
    // Another host's clock stepped while it waits for a host frozen or cut off (the wait its
    // takeover began): where a wait on the wall clock would end at once.
    const away = faults.find((f): f is Extract<Fault, { kind: 'freeze-host' | 'cut-host' }> => f.kind === 'freeze-host' || f.kind === 'cut-host');
    if (away && r.chance(0.4)) faults.push({ kind: 'clock-step', host: (away.host + r.int(1, hosts - 1)) % hosts, atMs: away.atMs + r.int(20_000, 100_000), byMs: 2 * 3_600_000 });
  }
  if (r.chance(0.2)) faults.push({ kind: 'clock-step', host: host(), atMs: at(), byMs: r.pick([2 * 3_600_000, -3_600_000, 45_000]) });
  if (r.chance(0.3)) faults.push({ kind: 'busy', atMs: at(), holdMs: r.int(500, 40_000), table: r.chance(0.5) });
  if (r.chance(0.3)) faults.push({ kind: 'pause', atMs: at(), forMs: r.int(1_000, 120_000) });
  if (r.chance(0.3)) faults.push({ kind: 'window', atMs: at(), size: r.int(1, 8) });
  if (r.chance(0.2)) faults.push({ kind: 'abort', atMs: at() });
  const s: Schedule = {
    seed,
    hosts,
    stages,
    stateTimeoutMs,
    leaseMs: 15_000,
    pFail: r.pick([0, 0.02, 0.08]),
    pDefer: r.pick([0, 0, 0.05]),
    pHang: stateTimeoutMs === null ? 0 : r.pick([0, 0, 0.02]),
    retry: r.chance(0.7),
    rerunOnLostHost: false,
    startRate: null,
    horizonMs,
    faults,
  };
  if (hosts > 1 && stateTimeoutMs !== null) s.rerunOnLostHost = r.chance(0.25);
  if (r.chance(0.2)) {
    const ramp = r.chance(0.5);
    s.startRate = { perMin: r.pick([2, 6, 20]), factor: ramp ? r.pick([1.5, 2, 4]) : 1, after: ramp ? r.int(1, 3) : null };
    if (r.chance(0.4)) faults.push({ kind: 'rate', atMs: at(), perMin: r.pick([1, 3, 30]) });
    s.faults = faults.filter((f) => f.kind !== 'clock-step');
  }
  // An abort with no apply alive, its runs still going or ended meanwhile (one host: its files say which).
  const kills = faults.filter((f): f is Extract<Fault, { kind: 'kill' }> => f.kind === 'kill');
  if (kills.length && r.chance(0.3)) {
    const k = r.pick(kills);
    k.abortAfterMs = r.int(500, k.restartMs);
  }
  // Drawn last, so that everything above is the schedule the same seed has on a file.
  if (o.server) {
    for (let i = r.int(0, 2); i > 0; i--) faults.push({ kind: 'cut', atMs: at(), host: r.chance(0.5) ? host() : null });
    if (r.chance(0.3)) faults.push({ kind: 'commit-lost', atMs: at(), host: host() });
  }
  return s;
}

/**
 * How long after the quiet begins every site must have ended: every stage's sites through every
 * state at the longest a run takes (a timeout, or the longest draw), a window at a time, twice
 * over (retries and deferrals), plus the leases, timeouts and the operator's looks a recovery
 * waits for.
 */
export function livenessBoundMs(s: Schedule, states: number): number {
  const runMs = Math.max(30_000, (s.stateTimeoutMs ?? 0) + 60_000);
  const work = s.stages.reduce((sum, st) => sum + Math.ceil(st.sites / st.window) * states * runMs, 0);
  return 2 * work + 10 * s.leaseMs + 2 * (s.stateTimeoutMs ?? 0) + 15 * 60_000;
}

/** When the quiet begins: the horizon, and the end of every fault that lasts past it. */
export function quietAt(s: Schedule): number {
  let t = s.horizonMs;
  for (const f of s.faults) {
    if ('forMs' in f) t = Math.max(t, f.atMs + f.forMs);
    if (f.kind === 'busy') t = Math.max(t, f.atMs + f.holdMs);
  }
  return t;
}

/** Schedules smaller than `s`: each with one fault fewer, one site fewer, one stage fewer. */
export function smaller(s: Schedule): Schedule[] {
  const out = s.faults.map((_, i) => ({ ...s, faults: s.faults.filter((_, j) => j !== i) }));
  if (s.retry) out.push({ ...s, retry: false });
  for (const [i, st] of s.stages.entries()) if (st.sites > 1) out.push({ ...s, stages: s.stages.map((x, j) => (j === i ? { ...x, sites: x.sites - 1 } : x)) });
  if (s.stages.length > 1) out.push({ ...s, stages: s.stages.slice(0, -1) });
  return out;
}

/** A schedule read back from its JSON (`--schedule FILE`), checked field by field. */
export function parseSchedule(text: string): Schedule {
  const s = JSON.parse(text) as Schedule;
  const bad = (what: string) => new Error(`not a schedule: ${what}`);
  if (typeof s !== 'object' || s === null) throw bad('not an object');
  for (const k of ['seed', 'hosts', 'leaseMs', 'pFail', 'pDefer', 'pHang', 'horizonMs'] as const) if (typeof s[k] !== 'number') throw bad(`${k} is not a number`);
  if (!(s.stateTimeoutMs === null || typeof s.stateTimeoutMs === 'number')) throw bad('stateTimeoutMs is not a number or null');
  if (!Array.isArray(s.stages) || !s.stages.every((st) => Number.isInteger(st.window) && Number.isInteger(st.sites))) throw bad('stages');
  if (!Array.isArray(s.faults) || !s.faults.every((f) => typeof f.kind === 'string')) throw bad('faults');
  if (typeof s.retry !== 'boolean') throw bad('retry is not a boolean');
  s.rerunOnLostHost = s.rerunOnLostHost === true;
  s.startRate ??= null;
  return s;
}
