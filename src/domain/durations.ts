/** Durations as people type them: `0`, `250ms`, `2s`, `1.5m`, `1h`; a bare number is milliseconds. */
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) return null;
  const ms = Number(m[1]) * UNITS[m[2] ?? 'ms'];
  return Number.isFinite(ms) ? Math.round(ms) : null;
}

/** `MIN..MAX` or a single duration (MIN = MAX). */
export function parseDurationRange(text: string): { min: number; max: number } | null {
  const parts = text.split('..');
  if (parts.length > 2) return null;
  const min = parseDuration(parts[0]);
  const max = parts.length === 2 ? parseDuration(parts[1]) : min;
  if (min === null || max === null || max < min) return null;
  return { min, max };
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0 && ms > 0) return `${ms / 1000}s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)}s`;
  return `${ms}ms`;
}
