/**
 * A process's clocks, as its runtime (platform/runtime.ts) gives them: apart from the rest of the
 * runtime so that a database connection, which carries its holder's clock, loads nothing more.
 */
export interface Clock {
  /** Wall-clock time, epoch ms: for what is shown or stored only. NTP or an operator may step it, forward or back. */
  wall(): number;
  /** Monotonic ms from an arbitrary origin: every local wait, deadline and bound. It never steps. */
  mono(): number;
  /**
   * The database server's clock (epoch ms), when the runtime stands in for it: the simulator, whose
   * hours of virtual leases a real server's clock would judge by the few real seconds they take.
   * Absent: the store asks the server (store/workers.ts storeClockMs).
   */
  server?(): number;
}

/** This process's clocks: Date for the wall, performance for the monotonic one. */
export const REAL_CLOCK: Clock = {
  wall: () => Date.now(),
  mono: () => performance.now(),
};
