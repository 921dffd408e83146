/** dcmanager prints times as `YYYY-MM-DD HH:MM:SS.ffffff` in UTC. */

// The orchestrator stamps every transition: the `YYYY-MM-DD HH:MM:SS` part changes once a second,
// so it is remembered rather than rebuilt from a Date each time.
let cachedSecond = NaN;
let cachedPrefix = '';

export function formatTimestamp(epochMicros: number): string {
  const micros = Math.floor(epochMicros);
  const second = Math.floor(micros / 1_000_000);
  if (second !== cachedSecond) {
    const iso = new Date(second * 1000).toISOString(); // 2025-01-01T10:01:00.000Z
    cachedPrefix = `${iso.slice(0, 10)} ${iso.slice(11, 19)}.`;
    cachedSecond = second;
  }
  return cachedPrefix + String(micros - second * 1_000_000).padStart(6, '0');
}

/** Parse a stored timestamp back to epoch microseconds (for durations and models). */
export function parseTimestamp(text: string): number {
  const [date, time] = text.split(' ');
  const [hms, frac = '0'] = time.split('.');
  const ms = Date.parse(`${date}T${hms}Z`);
  return ms * 1000 + Number(frac.padEnd(6, '0').slice(0, 6));
}
