#!/usr/bin/env node
/**
 * Baseline of figure 6: the processes of an exec apply without dcm. SUBCLOUDS subclouds walk
 * STATES states each, at most WINDOW subclouds at a time (a sliding window: a subcloud's next
 * state starts when its previous one exits, the next subcloud when one ends); every state is one
 * spawn of CMD with node's child_process, stdio ignored. Prints per-run times (ms, spawn to exit)
 * as JSON on stdout when asked with --times.
 *
 * With --wrap WRAPPER DIR, each spawn is `WRAPPER DIR/<n> 0022 CMD` instead: dcm's native run
 * wrapper (native/dcm-run) taking each run with files of its own, without dcm.
 *
 * usage: node bench/baseline/spawn-loop.js SUBCLOUDS STATES WINDOW CMD [--times] [--wrap WRAPPER DIR]
 */
import { spawn } from 'node:child_process';

const [subclouds, states, window] = process.argv.slice(2, 5).map(Number);
const cmd = process.argv[5];
const wantTimes = process.argv.includes('--times');
const wrap = process.argv.indexOf('--wrap');
const [wrapper, wrapDir] = wrap > 0 ? process.argv.slice(wrap + 1, wrap + 3) : [null, null];
const times = [];
let runs = 0;

function runOne() {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const child = wrapper ? spawn(wrapper, [`${wrapDir}/${runs++}`, '0022', cmd], { stdio: 'ignore' }) : spawn(cmd, [], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (wantTimes) times.push(Number(process.hrtime.bigint() - t) / 1e6);
      if (code !== 0) reject(new Error(`${cmd} exited ${code}`));
      else resolve();
    });
  });
}

let next = 0;
async function lane() {
  while (next < subclouds) {
    next++;
    for (let s = 0; s < states; s++) await runOne();
  }
}

await Promise.all(Array.from({ length: Math.min(window, subclouds) }, lane));
if (wantTimes) process.stdout.write(JSON.stringify(times));
