/**
 * The exec config's `audit`: one short command per site, whose stdout is the site's state as JSON
 * (domain/audit.ts). Unlike a state's run it changes nothing on the site, so it has no launcher,
 * no log file and no adoption: a run cut off is simply asked again. It is still its own process
 * group with stdin from /dev/null, and dcm waits until every process of the group is gone.
 */
import { spawn } from 'node:child_process';
import { AUDIT_OUTPUT_MAX, parseAudit } from '../../domain/audit.js';
import { formatDuration } from '../../domain/durations.js';
import type { AuditOutcome, AuditRequest, Driver } from '../driver.js';
import type { StateSpec } from './config.js';
import { runArgv, runCwd, runEnv, runValues, type RunSettings } from './run-env.js';
import { terminateGroup } from './procs.js';
import { setLongTimeout } from '../../platform/timers.js';

/** The placeholders' values and environment of an audit: a run whose state is `audit`. */
function auditRun(spec: StateSpec, req: AuditRequest, settings: RunSettings) {
  const runReq = {
    cloud: req.cloud,
    state: 'audit',
    type: req.type ?? ('' as never),
    attempt: 1,
    stage: req.stage,
    extra: req.extra ?? {},
    subcloud: req.subcloud,
    labels: req.labels,
    options: {},
  };
  const values = runValues(runReq, settings);
  const env = runEnv(runReq, spec, values, { base: '', runId: `audit:${req.cloud}` }, settings);
  // An audit has no log, no next state and no progress file of its own.
  delete env.DCM_LOG;
  delete env.DCM_NEXT;
  delete env.DCM_PROGRESS;
  delete env.DCM_FENCE;
  if (!req.type) delete env.DCM_TYPE;
  return { argv: runArgv(spec, values), cwd: runCwd(spec, values), env };
}

function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return (lines[lines.length - 1] ?? '').slice(0, 200);
}

/** Run the audit of one site; never rejects: a failure is the outcome's reason. */
export function runAudit(spec: StateSpec, req: AuditRequest, settings: RunSettings, baseEnv: NodeJS.ProcessEnv): Promise<AuditOutcome> {
  const { argv, cwd, env } = auditRun(spec, req, settings);
  return new Promise((resolve) => {
    let out = '';
    let err = '';
    let ended: string | null = null;
    let child;
    try {
      child = spawn(argv[0], argv.slice(1), { cwd, env: { ...baseEnv, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      resolve({ ok: false, reason: `audit: ${(e as Error).message}` });
      return;
    }
    const pid = child.pid;
    const stop = (why: string) => {
      if (ended !== null) return;
      ended = why;
      // The whole group, as a state's run is stopped: SIGTERM, SIGKILL after kill_grace.
      if (pid !== undefined) void terminateGroup(pid, spec.killGraceMs);
    };
    const timer = setLongTimeout(() => stop(`audit timed out after ${formatDuration(spec.timeoutMs)}`), spec.timeoutMs);
    const onAbort = () => stop('audit stopped');
    req.signal?.addEventListener('abort', onAbort, { once: true });
    if (req.signal?.aborted) onAbort();
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      if (out.length < AUDIT_OUTPUT_MAX) out += d;
    });
    child.stderr!.on('data', (d: string) => {
      err = (err + d).slice(-4096);
    });
    const done = (code: number | null, signal: NodeJS.Signals | null, spawnError?: Error) => {
      timer.clear();
      req.signal?.removeEventListener('abort', onAbort);
      const finish = (outcome: AuditOutcome) => {
        // Whatever the leader did, nothing of the group outlives the audit.
        if (pid === undefined) return resolve(outcome);
        void terminateGroup(pid, spec.killGraceMs).then(() => resolve(outcome));
      };
      if (spawnError) return finish({ ok: false, reason: `audit: ${spawnError.message}` });
      if (ended !== null) return finish({ ok: false, reason: ended });
      if (code !== 0) {
        const why = lastLine(err) || lastLine(out);
        return finish({ ok: false, reason: `audit: ${code === null ? `killed by ${signal}` : `exit ${code}`}${why ? `: ${why}` : ''}` });
      }
      if (out.length >= AUDIT_OUTPUT_MAX) return finish({ ok: false, reason: `audit: more than ${AUDIT_OUTPUT_MAX} bytes of output (expected one JSON object)` });
      const parsed = parseAudit(out);
      finish(parsed.ok ? parsed : { ok: false, reason: `audit: ${parsed.problem}` });
    };
    let settled = false;
    child.on('error', (e) => {
      if (settled) return;
      settled = true;
      done(null, null, e);
    });
    child.on('close', (code, signal) => {
      if (settled) return;
      settled = true;
      done(code, signal);
    });
  });
}

/**
 * A driver that only audits (`subcloud audit --driver exec`): no state runs, no launcher, no logs.
 * close() stops the audits in flight and waits for them.
 */
export function auditOnlyDriver(spec: StateSpec, settings: RunSettings): Driver & { audit: NonNullable<Driver['audit']> } {
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DCM_')));
  const inFlight = new Map<AbortController, Promise<AuditOutcome>>();
  let closed = false;
  return {
    run: async () => ({ kind: 'failed', reason: 'this driver only audits' }),
    audit(req) {
      if (closed) return Promise.resolve({ ok: false, reason: 'audit: the driver is closed' });
      const stop = new AbortController();
      req.signal?.addEventListener('abort', () => stop.abort(), { once: true });
      const p = runAudit(spec, { ...req, signal: stop.signal }, settings, baseEnv);
      inFlight.set(stop, p);
      return p.finally(() => inFlight.delete(stop));
    },
    async close() {
      closed = true;
      const all = [...inFlight.entries()];
      for (const [stop] of all) stop.abort();
      await Promise.all(all.map(([, p]) => p));
    },
  };
}
