/**
 * Which subclouds of the strategy must wait for their group's maintenance window before their
 * first state (the decision is domain/maintenance.ts's; the time is the injected clock's). Read
 * once as the apply starts: the groups that have a window and their subclouds (none in most
 * files, and then nothing is asked again).
 */
import { isOpen, nextOpening, parseMaintenanceWindow, windowLabel, type MaintenanceWindow } from '../domain/maintenance.js';
import { groupsWithWindows, subcloudGroupsOf } from '../store/groups.js';
import type { Db } from '../store/open.js';

interface GroupWindow {
  name: string;
  window: MaintenanceWindow;
  tz: string;
  /** Closed until then (epoch ms), as last decided; 0: open when last asked. */
  closedUntil: number;
  /** The opening last said in the progress (0: none said, or said open since). */
  said: number;
}

/** A group whose window is closed, for the views: when it opens. */
export interface WindowWait {
  group: string;
  label: string;
  opensMs: number;
}

export class MaintenanceWait {
  private constructor(
    private readonly groups: Map<number, GroupWindow>,
    private readonly groupOf: Map<number, number>,
    private readonly clock: () => number,
  ) {}

  /**
   * Null: no group has a window, no subcloud ever waits. Read again (`before`: what was read last),
   * a group said to wait is still said to open when it does.
   */
  static async load(db: Db, clock: () => number, before: MaintenanceWait | null = null): Promise<MaintenanceWait | null> {
    const rows = await groupsWithWindows(db);
    if (rows.length === 0) return null;
    const groups = new Map<number, GroupWindow>();
    for (const r of rows) {
      const said = before?.groups.get(r.id)?.said ?? 0;
      groups.set(r.id, { name: r.name, window: parseMaintenanceWindow(r.maintenance_window), tz: r.maintenance_tz ?? 'UTC', closedUntil: 0, said });
    }
    return new MaintenanceWait(groups, await subcloudGroupsOf(db, [...groups.keys()]), clock);
  }

  now(): number {
    return this.clock();
  }

  /**
   * Null: the subcloud may start its first state now. Else its group, closed, and when its window
   * opens. A closed window is not asked again before its opening (the answer cannot change).
   */
  heldUntil(subcloudId: number): WindowWait | null {
    const id = this.groupOf.get(subcloudId);
    const g = id === undefined ? undefined : this.groups.get(id);
    if (!g) return null;
    const now = this.clock();
    if (now < g.closedUntil) return this.wait(g);
    if (isOpen(g.window, g.tz, new Date(now))) {
      g.closedUntil = 0;
      return null;
    }
    g.closedUntil = nextOpening(g.window, g.tz, new Date(now)).getTime();
    return this.wait(g);
  }

  /**
   * The start decision as the window asks it: null, or the milliseconds to wait; `say` gets a line
   * for the progress each time a group starts waiting (for an opening not said yet) and when its
   * window has opened on the subclouds that waited.
   */
  decide(subcloudId: number, say: (line: string, opened: boolean) => void, waiting?: (group: string, text: string | null) => void): number | null {
    const w = this.heldUntil(subcloudId);
    const id = this.groupOf.get(subcloudId);
    const g = id === undefined ? undefined : this.groups.get(id);
    if (!g) return null;
    if (!w) {
      if (g.said) {
        say(`group ${g.name}: maintenance window ${windowLabel(g.window.text, g.tz)} is open, its subclouds start`, true);
        waiting?.(g.name, null);
      }
      g.said = 0;
      return null;
    }
    if (g.said !== w.opensMs) {
      g.said = w.opensMs;
      say(`group ${g.name} waits for its maintenance window ${w.label}: opens ${new Date(w.opensMs).toISOString()}`, false);
      waiting?.(g.name, `${g.name} ${w.label} opens ${new Date(w.opensMs).toISOString()}`);
    }
    return Math.max(0, w.opensMs - this.clock());
  }

  private wait(g: GroupWindow): WindowWait {
    return { group: g.name, label: windowLabel(g.window.text, g.tz), opensMs: g.closedUntil };
  }
}
