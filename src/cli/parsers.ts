/** Option-value parsers for commander: a bad value is a usage error (exit 2). */
import { InvalidArgumentError } from './commander.js';
import { ClientCheckError, UsageError } from '../domain/errors.js';
import { parseApplyType, parseIntIn } from '../domain/inventory.js';
import { STRATEGY_TYPES, type StrategyType } from '../domain/types.js';
import { parseDuration } from '../domain/durations.js';
import { formatMaxFailures, parseMaxFailures } from '../domain/control.js';

function wrap<T>(fn: (v: string) => T): (v: string) => T {
  return (v) => {
    try {
      return fn(v);
    } catch (err) {
      if (err instanceof UsageError) throw new InvalidArgumentError(err.message.replace(/^invalid [^']*'[^']*': /, ''));
      throw err;
    }
  };
}

export const applyType = wrap(parseApplyType);

/** A whole number; the range is checked later, in the order SPEC §5 gives. */
export const integer = wrap((v: string) => parseIntIn('value', v, -Infinity, Infinity));

/** 1, 2, 3, …: an attempt number. */
export const positiveInteger = wrap((v: string) => {
  const n = parseIntIn('value', v, -Infinity, Infinity);
  if (n < 1 || !Number.isSafeInteger(n)) throw new UsageError(`invalid value '${v}': must be 1 or more`);
  return n;
});

/**
 * A group's `--max_parallel_subclouds`: dcmanager's client sends it as typed and the server refuses
 * a bad one (exit 1 from the client), so this is not a usage error.
 */
export const groupMaxParallel = (v: string): number => {
  try {
    return parseIntIn('value', v, 1, 5000);
  } catch {
    throw new ClientCheckError(`Invalid group max_parallel_subclouds '${v}': give a whole number from 1 to 5000`);
  }
};

export const strategyType = wrap((v: string): StrategyType => {
  if (!(STRATEGY_TYPES as readonly string[]).includes(v)) {
    throw new UsageError(`invalid type '${v}': choose from ${STRATEGY_TYPES.join(', ')}`);
  }
  return v as StrategyType;
});

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** `--progress-interval`: a duration with its unit (`10s`, `1m`; `0s` for none). */
export const progressInterval = (v: string): number => {
  const ms = parseDuration(v, { unitRequired: true });
  if (ms === null) throw new InvalidArgumentError(`give a duration with a unit: 10s, 1m (got '${v}')`);
  return ms;
};

/** `apply --lease`: a duration with a unit, at least 1 s (a lease shorter than a heartbeat or two is always lost). */
export const lease = (v: string): number => {
  const ms = parseDuration(v, { unitRequired: true });
  if (ms === null || ms < 1000) throw new InvalidArgumentError(`give a duration with a unit, 1s or more: 30s, 2m (got '${v}')`);
  return ms;
};

/** `--max-failures N|P%`: checked here, kept as text (`3`, `5%`). */
export const maxFailures = (v: string): string => {
  try {
    return formatMaxFailures(parseMaxFailures(v));
  } catch (err) {
    if (err instanceof UsageError) throw new InvalidArgumentError(err.message.replace(/^invalid --max-failures '[^']*': /, ''));
    throw err;
  }
};
