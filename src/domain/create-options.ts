/**
 * The options a strategy was created with beyond its type options and targets, each by the flag
 * that gave it, as the report's "What was rolled out" lists them (issue 34: `--defer-delay`,
 * `--defer-until` and the audit were missing, so a post-mortem could not say how the rollout was
 * told to treat a site that did not answer). Pure: the stored extra args in, lines out.
 */
import { formatDuration } from './durations.js';

type Extra = Record<string, unknown>;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** The exec config as stored, or null (the sim's strategies, a config that cannot be read). */
function execConfig(extra: Extra): { on_event?: unknown; states?: { state: string; timeoutMs: number | null }[] } | null {
  if (typeof extra.exec_config !== 'string') return null;
  try {
    return JSON.parse(extra.exec_config) as { on_event?: unknown; states?: { state: string; timeoutMs: number | null }[] };
  } catch {
    return null;
  }
}

/** The exec config's on_event (stored as `{run, cwd}`; the flag is the sim's). */
function execOnEvent(extra: Extra): string | null {
  const cmd = execConfig(extra)?.on_event;
  const run = cmd !== null && typeof cmd === 'object' && 'run' in cmd ? (cmd as { run: unknown }).run : cmd;
  return Array.isArray(run) ? run.map(String).join(' ') : text(run);
}

/**
 * An exec strategy's timeouts are its config's, one per state (`--state-timeout` is the sim's):
 * each timeout with the states it is theirs, `1h (pre check, updating patches); 5m (…)`.
 */
function execTimeouts(extra: Extra): string | null {
  const states = execConfig(extra)?.states;
  if (!Array.isArray(states) || states.length === 0) return null;
  const by = new Map<string, string[]>();
  for (const st of states) {
    // JSON has no Infinity: `timeout: none` is stored as null.
    const t = typeof st.timeoutMs === 'number' ? formatDuration(st.timeoutMs) : 'none';
    by.set(t, [...(by.get(t) ?? []), st.state]);
  }
  return [...by].map(([t, names]) => (by.size === 1 ? `${t} (every state)` : `${t} (${names.join(', ')})`)).join('; ');
}

/** Each option as `[flag, value]`; an option not given is left out, except the audit and the deferral, said either way. */
export function createOptionLines(extra: Extra): [string, string][] {
  const out: [string, string][] = [];
  const timeouts = execTimeouts(extra);
  const timeout = num(extra.state_timeout_ms);
  if (timeouts !== null) out.push(['timeout (exec config)', timeouts]);
  else if (timeout !== null) out.push(['--state-timeout', formatDuration(timeout)]);
  // How a site that did not answer was treated: its retry delay and the time past which it fails.
  const delay = num(extra.defer_delay_ms);
  out.push(['--defer-delay', delay === null ? 'None' : formatDuration(delay)]);
  out.push(['--defer-until', text(extra.defer_until) ?? 'None']);
  const audit = extra.audit_after === true;
  out.push([
    'audit after each site',
    !audit
      ? 'no'
      : extra.require_audit === true
        ? 'yes, --require-audit: a site that disagrees fails its step'
        : extra.audit_disagrees_ok === true
          ? 'yes, --audit-disagrees-ok: a disagreement is a warning, and exits 0'
          : 'yes: a disagreement is a warning, and apply exits 5',
  ]);
  const onEvent = text(extra.on_event);
  if (onEvent !== null) out.push(['--on-event', onEvent]);
  const execOn = execOnEvent(extra);
  if (execOn !== null) out.push(['on_event (exec config)', execOn]);
  const logDir = text(extra.log_dir);
  if (logDir !== null) out.push(['--log-dir', logDir]);
  // The sim's own: what its sites were told to do.
  const min = num(extra.sim_latency_min_ms);
  const max = num(extra.sim_latency_max_ms);
  if (min !== null && max !== null) out.push(['--sim-latency', min === max ? formatDuration(min) : `${formatDuration(min)}..${formatDuration(max)}`]);
  if (Array.isArray(extra.sim_fail) && extra.sim_fail.length) out.push(['--sim-fail', extra.sim_fail.map(String).join(' ')]);
  const rate = num(extra.sim_fail_rate);
  if (rate !== null && rate > 0) out.push(['--sim-fail-rate', String(rate)]);
  const seed = num(extra.sim_seed);
  if (seed !== null) out.push(['--sim-seed', String(seed)]);
  // The plan as reviewed (`strategy create --dry-run` printed it; `--plan` pinned it or not).
  const digest = text(extra.plan_digest);
  if (digest !== null) out.push(['plan digest', `${digest}${extra.plan_pinned === true ? ' (pinned with --plan)' : ''}`]);
  return out;
}
