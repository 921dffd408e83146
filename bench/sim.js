#!/usr/bin/env node
// `npm run sim -- --seed S [--schedules N]`: the deterministic simulator (src/sim), built.
import { main } from '../dist/sim/cli.js';

process.exitCode = await main(process.argv.slice(2));
