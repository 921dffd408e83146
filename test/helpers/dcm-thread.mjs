/**
 * The worker thread behind test/helpers/quick.ts's `dcmQuick`: the built CLI's `main(argv, io)`,
 * loaded once and called once per request, so a test's set-up and read-backs do not each pay a
 * Node start (about 0.25 s of CPU; the suite starts thousands). Plain JavaScript: a worker runs
 * outside jest's transform, on the built tree as bin/dcm.js does.
 *
 * The caller blocks on `state` (Atomics.wait) until a request's answer is on `port`, which it then
 * reads synchronously (receiveMessageOnPort): requests are one at a time, like spawnSync's.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Readable } from 'node:stream';

// A tree that does not load (not built) answers every request with why, instead of leaving the
// caller waiting on a thread that died.
let main;
let loadError;
try {
  ({ main } = await import(workerData.mainUrl));
} catch (err) {
  loadError = err;
}
const state = new Int32Array(workerData.shared);
const port = workerData.port;
// A thread that dies (an error after a command returned) wakes a caller that waits on it: 2 says so.
// An exit with no error (process.exit, or nothing left to keep the thread) says how, with where
// it was called from: 'exit' is emitted inside process.exit, whose caller is on the stack.
let told = false;
process.on('exit', (code) => {
  if (!told) port.postMessage({ died: `exit ${code}, not by an error: ${new Error('at exit').stack}`, during: running });
  Atomics.store(state, 0, 2);
  Atomics.notify(state, 0);
});
// What killed it goes to the caller first, as the answer it waits for: an error thrown where no
// command catches it (a timer or a promise a command left behind) would otherwise reach the
// caller's event loop only after its call had given up, and the failure could not say why.
let running = null;
function died(err) {
  told = true;
  port.postMessage({ died: String((err && err.stack) || err), during: running });
  process.exit(1);
}
process.on('uncaughtException', died);
process.on('unhandledRejection', died);
const base = { ...process.env };

function sink() {
  const s = {
    isTTY: false,
    text: '',
    write(chunk, encoding, cb) {
      s.text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      if (typeof encoding === 'function') encoding();
      else if (typeof cb === 'function') cb();
      return true;
    },
  };
  return s;
}

parentPort.on('message', async ({ args, env }) => {
  running = args.join(' ');
  // The environment a spawned dcm would get: the test process's, the call's additions, no DCM_DB
  // or DCM_DEBUG unless the call names them.
  for (const k of Object.keys(process.env)) if (!(k in base)) delete process.env[k];
  Object.assign(process.env, base, env);
  if (!env.DCM_DB) delete process.env.DCM_DB;
  if (!env.DCM_DEBUG) delete process.env.DCM_DEBUG;
  const stdout = sink();
  const stderr = sink();
  // What a command writes to the process's own streams (a progress line, a sink) is its output too.
  const writes = { out: process.stdout.write, err: process.stderr.write };
  process.stdout.write = stdout.write;
  process.stderr.write = stderr.write;
  let code;
  try {
    if (loadError) throw loadError;
    code = await main(args, { stdout, stderr, stdin: Readable.from([]) });
  } catch (err) {
    stderr.text += `[dcmQuick: main threw] ${err && err.stack ? err.stack : err}\n`;
    code = 70;
  } finally {
    process.stdout.write = writes.out;
    process.stderr.write = writes.err;
  }
  running = null;
  port.postMessage({ code, stdout: stdout.text, stderr: stderr.text });
  Atomics.store(state, 0, 1);
  Atomics.notify(state, 0);
});
