/** The sim driver's create options, as declared to commander (checked in ./options.ts). */
import type { DriverOption } from '../index.js';

export const SIM_OPTIONS: DriverOption[] = [
  { flags: '--sim-latency <min[..max]>', key: 'simLatency', help: 'sim driver: duration of each state operation (default 200ms..1s)' },
  { flags: '--sim-fail-rate <p>', key: 'simFailRate', help: 'sim driver: probability that an operation fails (0..1)' },
  { flags: '--sim-seed <n>', key: 'simSeed', help: 'sim driver: same seed, same outcomes' },
  { flags: '--sim-fail <cloud=state>', key: 'simFail', help: 'sim driver: that subcloud fails in that state (repeatable)', repeatable: true },
  { flags: '--sim-audit', key: 'simAudit', help: "sim driver: audit each site after its last state, as an exec config's audit does (implied by --require-audit)" },
];
