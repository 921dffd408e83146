import os from 'node:os';

/**
 * Signals in one place: the first SIGINT/SIGTERM drains (nothing new starts, operations in flight
 * finish and are committed), a second one stops waiting.
 *
 * The returned function lets go of `handler`. What comes after it is written and about to be
 * printed; a signal then ends dcm at once with the shell's code for it (130, 143) rather than by
 * the default action, which a script would read as a kill of a process that had nothing left to do.
 */
export function onSignals(handler: (signal: NodeJS.Signals) => void): () => void {
  const listener = (signal: NodeJS.Signals) => handler(signal);
  listen(exitAtOnce, false);
  listen(listener, true);
  return () => {
    // The new listener first: with none at all, even for an instant, Node gives the signal back
    // to its default action, and a second Ctrl-C landing then would kill dcm (exit by signal).
    listen(exitAtOnce, true);
    listen(listener, false);
  };
}

function exitAtOnce(signal: NodeJS.Signals): void {
  process.exit(128 + os.constants.signals[signal]);
}

function listen(listener: (signal: NodeJS.Signals) => void, on: boolean): void {
  for (const s of ['SIGINT', 'SIGTERM'] as const) {
    process.off(s, listener);
    if (on) process.on(s, listener);
  }
}
