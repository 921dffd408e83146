/**
 * `npm test`'s run of the suite, after the build and the type check: the whole suite on SQLite
 * files (`jest`), then the PostgreSQL pass (jest.pg.config.js), with the pass's several-hosts files
 * (test/pg/workers*.test.ts) started at once, beside the first, on a server of their own.
 *
 * Why beside: those files wait more than they compute. Their runs outlast a 2 s lease by design,
 * and they hold a writer's lock for seconds, freeze a worker past its lease, and wait for takeovers;
 * alone they keep the machine's two cores about a fifth busy for three to four minutes, which the
 * suite beside them fills. Their output is kept and printed whole once they end, after the other
 * two parts, so that no part's lines are mixed with another's. The exit code is the first failing
 * part's, else 0; a signal stops every part.
 *
 * `npm run test:pg` still runs the whole pass alone, several-hosts files included.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const env = { ...process.env, NODE_OPTIONS: [process.env.NODE_OPTIONS, '--experimental-vm-modules'].filter(Boolean).join(' ') };
const jest = path.join('node_modules', 'jest', 'bin', 'jest.js');
const children = new Set();

function run(args, extraEnv, output) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [jest, ...args], { env: { ...env, ...extraEnv }, stdio: ['ignore', output ?? 'inherit', output ?? 'inherit'] });
    children.add(child);
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    for (const c of children) c.kill('SIGTERM');
    process.exit(sig === 'SIGINT' ? 130 : 143);
  });
}

const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'dcm-suite-')), 'hosts.log');
const log = fs.openSync(logFile, 'w');
const started = Date.now();
const hosts = run(['-c', 'jest.pg.config.js'], { DCM_TEST_PG_PART: 'hosts' }, log).then((code) => ({ code, s: Math.round((Date.now() - started) / 1000) }));
const codes = [await run([], {})];
console.log('\n== the PostgreSQL pass (jest.pg.config.js), without its several-hosts files, which run beside the suite\n');
codes.push(await run(['-c', 'jest.pg.config.js'], { DCM_TEST_PG_PART: 'store' }));
const h = await hosts;
fs.closeSync(log);
console.log(`\n== the PostgreSQL pass's several-hosts files, run beside the rest (${h.s} s, exit ${h.code}):\n`);
process.stdout.write(fs.readFileSync(logFile));
fs.rmSync(path.dirname(logFile), { recursive: true, force: true });
codes.push(h.code);
process.exit(codes.find((c) => c !== 0) ?? 0);
