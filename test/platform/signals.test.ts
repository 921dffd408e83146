/**
 * A real runtime's signals (src/platform/runtime.ts REAL_SIGNALS): while apply runs its handler gets SIGINT and SIGTERM;
 * once let go, a signal ends dcm with the shell's code. At no moment is a signal left to Node's
 * default action (which kills the process): a second Ctrl-C that lands just as apply lets go of
 * its handler once made a script read `killed by SIGINT` instead of exit 130.
 */
import { afterEach, expect, test } from '@jest/globals';
import { REAL_SIGNALS } from '../../src/platform/runtime.js';

const onSignals = (h: (s: string) => void) => REAL_SIGNALS.listen(h);

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const before = new Map(SIGNALS.map((s) => [s, process.listeners(s)]));
afterEach(() => {
  for (const s of SIGNALS) {
    process.removeAllListeners(s);
    for (const l of before.get(s)!) process.on(s, l);
  }
});

test('the handler gets the signal; once released, a listener stays (exit 128 + n), and none was ever missing', () => {
  const got: string[] = [];
  const release = onSignals((s) => got.push(s));
  process.emit('SIGINT', 'SIGINT');
  expect(got).toEqual(['SIGINT']);

  // Every listener count seen while the handler is let go, signal by signal.
  const seen: number[] = [];
  const off = process.off.bind(process);
  const on = process.on.bind(process);
  const watch = (f: typeof off) =>
    ((event: string | symbol, l: (...a: unknown[]) => void) => {
      const r = f(event, l);
      if (SIGNALS.includes(event as (typeof SIGNALS)[number])) seen.push(process.listenerCount(event));
      return r;
    }) as typeof off;
  process.off = watch(off);
  process.on = watch(on);
  try {
    release();
  } finally {
    process.off = off;
    process.on = on;
  }
  expect(Math.min(...seen)).toBeGreaterThan(0);
  for (const s of SIGNALS) expect(process.listenerCount(s)).toBe(before.get(s)!.length + 1);
  // The handler no longer gets anything.
  const exits: number[] = [];
  const exit = process.exit;
  process.exit = ((code: number) => void exits.push(code)) as typeof process.exit;
  try {
    process.emit('SIGINT', 'SIGINT');
    process.emit('SIGTERM', 'SIGTERM');
  } finally {
    process.exit = exit;
  }
  expect(got).toEqual(['SIGINT']);
  expect(exits).toEqual([130, 143]);
});
