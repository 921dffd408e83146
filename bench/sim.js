#!/usr/bin/env node
// `npm run sim -- --seed S [--schedules N]`: the deterministic simulator (src/sim), built.
import '../dist/sim/main.js';
