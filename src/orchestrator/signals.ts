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

