/**
 * Signals in one place: the first SIGINT/SIGTERM drains (nothing new starts, operations in flight
 * finish and are committed), a second one stops waiting.
 */
export function onSignals(handler: (signal: NodeJS.Signals) => void): () => void {
  const listener = (signal: NodeJS.Signals) => handler(signal);
  process.on('SIGINT', listener);
  process.on('SIGTERM', listener);
  return () => {
    process.off('SIGINT', listener);
    process.off('SIGTERM', listener);
  };
}

/**
 * A file-size limit (`ulimit -f`) sends SIGXFSZ, whose default action kills the process mid-write.
 * Ignored, the write fails with EFBIG instead, and the apply stops as on a full disk (SPEC §2.1).
 */
export function ignoreFileSizeSignal(): void {
  if (process.platform !== 'win32' && process.listenerCount('SIGXFSZ') === 0) process.on('SIGXFSZ', () => {});
}
