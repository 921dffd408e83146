/** The exec driver's create options, as declared to commander (checked in ./options.ts). */
import type { DriverOption } from '../index.js';

export const EXEC_OPTIONS: DriverOption[] = [
  { flags: '--exec-config <file>', key: 'execConfig', help: 'exec driver: the YAML or JSON file naming a command per state (required)' },
  { flags: '--log-dir <dir>', key: 'logDir', help: "exec driver: where each run's output goes, a folder per strategy in it (default: the database path + .logs)" },
];
