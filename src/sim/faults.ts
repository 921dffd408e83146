/**
 * The faults of a schedule (schedule.ts), each set on the world's clock at its moment: operator
 * commands from another shell, signals, processes frozen or killed, hosts paused, cut off from the
 * store, lost or with their clock stepped, another session holding the store, and on a server its
 * sessions cut. What each one does to a simulated process goes through that process's runtime
 * (hosts.ts) or its connection (sim-db.ts), as the real fault would reach dcm.
 */
import { strategyPause, strategyResume, strategyUpdate } from '../commands/control.js';
import type { Fault } from './schedule.js';
import type { World } from './world.js';

export function armFaults(w: World): void {
  for (const f of w.s.faults) arm(w, f);
}

/** Worker `n`'s apply running now, if any (several hosts). */
function worker(w: World, n: number) {
  return w.live().find((a) => a.w === n);
}

function arm(w: World, f: Fault): void {
  const at = (ms: number, fn: () => void | Promise<void>) => w.loop.at(ms, () => w.background(f.kind, fn));
  const op = w.operator;
  switch (f.kind) {
    case 'kill':
      // Set on its commit (operator.ts commitHooks).
      break;
    case 'pause':
      at(f.atMs, () => op.command('pause', () => strategyPause(w.ctx)).then(() => undefined));
      at(f.atMs + f.forMs, () => op.command('resume', () => strategyResume(w.ctx)).then(() => undefined));
      break;
    case 'window':
      at(f.atMs, async () => {
        // Committed by the command before it returns: in force from now, as the judge sees it, in
        // every stage but those the command said had ended (they keep the window they ran with,
        // which a retry into them runs with again).
        let notes: string[] = [];
        if (await op.command('window', async () => ({ notes = [] } = await strategyUpdate(w.ctx, undefined, { maxParallelSubclouds: f.size })))) {
          w.windows.set(w.loop.now, f.size, keptStages(notes, 'the window it ran with'));
        }
      });
      break;
    case 'abort':
      at(f.atMs, () => op.abort());
      break;
    case 'interrupt':
      at(f.atMs, () => {
        for (const a of w.live()) {
          w.hit('interrupt');
          a.proc.signal('SIGINT');
          if (f.twice) w.loop.after(200, () => a.proc.signal('SIGINT'));
        }
      });
      break;
    case 'freeze':
      at(f.atMs, () => {
        const a = worker(w, f.worker);
        if (!a) return;
        w.hit('freeze');
        w.log(`${a.proc.name} frozen for ${f.forMs} ms`);
        a.proc.freeze();
        w.loop.after(f.forMs, () => {
          w.log(`${a.proc.name} continued`);
          a.proc.thaw();
        });
      });
      break;
    case 'kill-worker':
      at(f.atMs, () => {
        const a = worker(w, f.worker);
        if (!a) return;
        w.hit('kill');
        w.log(`${a.proc.name} killed`);
        a.proc.kill();
        op.again(f.worker, f.restartMs);
      });
      break;
    case 'freeze-host':
      at(f.atMs, () => {
        const h = w.hostOf(f.host);
        if (h.lost) return;
        w.hit('freeze-host');
        w.log(`${h.name} paused for ${f.forMs} ms`);
        h.freeze();
        w.sites.hostPaused(h.name, true);
        w.loop.after(f.forMs, () => {
          w.log(`${h.name} continued`);
          w.sites.hostPaused(h.name, false);
          h.thaw();
        });
      });
      break;
    case 'cut-host':
      at(f.atMs, () => {
        const h = w.hostOf(f.host);
        if (h.lost || h.cut) return;
        w.hit('cut-host');
        w.log(`${h.name} cut off from the store for ${f.forMs} ms`);
        h.cut = true;
        w.loop.after(f.forMs, () => {
          w.log(`${h.name} reaches the store again`);
          op.healed(h);
        });
      });
      break;
    case 'lose-host':
      at(f.atMs, () => {
        const h = w.hostOf(f.host);
        if (h.lost) return;
        w.hit('lose-host');
        w.log(`${h.name} lost with everything on it`);
        for (const l of w.launchers) if (l.proc.host === h) l.lost();
        h.lose();
        // Its worker moves to a spare host, as an operator would start one there.
        op.again(f.host, 60_000);
      });
      break;
    case 'clock-step':
      at(f.atMs, () => {
        const h = w.hostOf(f.host);
        w.hit('clock-step');
        w.log(`${h.name}'s clock stepped by ${f.byMs / 1000} s`);
        h.offsetMs += f.byMs;
      });
      break;
    case 'resolve':
      at(f.atMs, () => op.resolveHeld());
      break;
    case 'busy':
      at(f.atMs, async () => {
        w.hit(f.table && w.store.server ? 'lock-table' : 'busy');
        w.log(`${f.table && w.store.server ? 'LOCK TABLE from another session' : 'the store held by another session'} for ${f.holdMs} ms`);
        const release = await w.store.holdWriters(f.table);
        w.busyUntil = Math.max(w.busyUntil, w.loop.now + f.holdMs);
        w.loop.after(f.holdMs, () => w.background('the lock let go', release));
      });
      break;
    case 'cut':
      at(f.atMs, async () => {
        if (!w.store.server) return;
        w.hit('cut');
        const host = f.host === null ? null : w.hostOf(f.host).name;
        await w.store.cutSessions(host);
        w.log(host === null ? "the server cut dcm's sessions" : `the server cut ${host}'s sessions`);
      });
      break;
    case 'rate':
      at(f.atMs, async () => {
        // Read by the next commit that starts a subcloud: in force from its commit, as the judge sees it.
        const before = w.rates[w.rates.length - 1]?.rate;
        let notes: string[] = [];
        if (await op.command('rate', async () => ({ notes = [] } = await strategyUpdate(w.ctx, undefined, { startRate: `${f.perMin}/min` })))) {
          w.rates.push({ atMs: w.loop.now, rate: { perMin: f.perMin, factor: before?.factor ?? 1, after: before?.after ?? null }, kept: keptStages(notes, 'its start rate') });
        }
      });
      break;
    case 'commit-lost':
      at(f.atMs, () => {
        if (!w.store.server) return;
        const host = w.hostOf(f.host).name;
        w.hit('commit-lost');
        w.log(`${host}'s next COMMIT loses its answer with its connection`);
        w.store.loseNextCommit(host);
      });
      break;
  }
}

/** The stages `strategy update` told the operator had ended and keep what they ran with (its notes). */
function keptStages(notes: readonly string[], what: string): Set<number> {
  const kept = new Set<number>();
  for (const n of notes) {
    const m = /^stage (\d+) has ended and keeps (.*)$/.exec(n);
    if (m && m[2].startsWith(what)) kept.add(Number(m[1]));
  }
  return kept;
}
