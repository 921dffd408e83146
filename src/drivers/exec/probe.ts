/**
 * The exec config's `probe` (issue 18, "Sites that answer"): one short command per site that exits
 * 0 when the site answers. Unlike a state's run it belongs to no strategy and no log folder: dcm
 * waits for it, reads its last line of output for the detail, and kills its process group once its
 * timeout is over (a probe that hangs is a site that does not answer).
 */
import { spawn } from 'node:child_process';
import type { StateSpec } from './config.js';
import { runArgv, runCwd, runEnv, runValues, type RunRequest } from './run-env.js';
import { formatDuration } from '../../domain/durations.js';
import type { ProbeResult, ProbeSite } from '../probe.js';
import { setLongTimeout } from '../../platform/timers.js';

/** Output kept per probe, for its last line: a probe that talks a lot is cut, not buffered whole. */
const OUTPUT_KEPT = 8192;

export function execProber(spec: StateSpec, dbPath: string): (site: ProbeSite) => Promise<ProbeResult> {
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DCM_')));
  return (site) => {
    const req: RunRequest = { cloud: site.cloud, state: 'probe', type: 'custom', attempt: 1, extra: {}, subcloud: site.fields, labels: site.labels, options: {} };
    const settings = { dbPath };
    const values = runValues(req, settings);
    const argv = runArgv(spec, values);
    // A probe has no run files: its log and friends are /dev/null.
    const env = { ...baseEnv, ...runEnv(req, spec, values, { base: '/dev/null', runId: `probe-${site.cloud}` }, settings) };
    env.DCM_LOG = '/dev/null';
    env.DCM_NEXT = '/dev/null';
    env.DCM_PROGRESS = '/dev/null';
    return new Promise<ProbeResult>((resolve) => {
      let out = '';
      let timedOut = false;
      const keep = (b: Buffer) => {
        out = (out + b.toString('utf8')).slice(-OUTPUT_KEPT);
      };
      let child;
      try {
        child = spawn(argv[0], argv.slice(1), { cwd: runCwd(spec, values), env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      } catch (err) {
        resolve({ answered: false, detail: `cannot run the probe: ${(err as Error).message}` });
        return;
      }
      child.stdout!.on('data', keep);
      child.stderr!.on('data', keep);
      const timer = setLongTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }, spec.timeoutMs);
      child.on('error', (err) => {
        timer.clear();
        resolve({ answered: false, detail: `cannot run the probe: ${err.message}` });
      });
      child.on('close', (code, signal) => {
        timer.clear();
        const line = lastLine(out);
        if (timedOut) resolve({ answered: false, detail: `no answer within ${formatDuration(spec.timeoutMs)}` });
        else if (code === 0) resolve({ answered: true, detail: line });
        else resolve({ answered: false, detail: code === null ? `killed by ${signal}` : line ? `exit ${code}: ${line}` : `exit ${code}` });
      });
    });
  };
}

function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const last = lines[lines.length - 1] ?? '';
  return last.length > 200 ? `${last.slice(0, 199)}…` : last;
}
