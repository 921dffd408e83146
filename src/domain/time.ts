/** dcmanager prints times as `YYYY-MM-DD HH:MM:SS.ffffff` in UTC. */
export function formatTimestamp(epochMicros: number): string {
  const ms = Math.floor(epochMicros / 1000);
  const iso = new Date(ms).toISOString(); // 2025-01-01T10:01:00.000Z
  const micros = String(Math.floor(epochMicros) % 1_000_000).padStart(6, '0');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${micros}`;
}

/** Parse a stored timestamp back to epoch microseconds (for durations and models). */
export function parseTimestamp(text: string): number {
  const [date, time] = text.split(' ');
  const [hms, frac = '0'] = time.split('.');
  const ms = Date.parse(`${date}T${hms}Z`);
  return ms * 1000 + Number(frac.padEnd(6, '0').slice(0, 6));
}
