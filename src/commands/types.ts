/**
 * `dcm strategy types [TYPE]`: each strategy type with its alias, sync endpoint, states in order,
 * options and the options it requires. Read from the tables create and apply use (domain/types.ts,
 * domain/options.ts), so that what it says is what they do; nothing is read from the file.
 */
import { describeTypeOptions } from '../domain/options.js';
import { STRATEGY_TYPES, TYPES, TYPE_STATES, type StrategyType } from '../domain/types.js';
import { list, type ListResult, type Value } from './plain-results.js';

export const TYPE_COLUMNS = ['type', 'alias', 'sync endpoint', 'states', 'options', 'required options'];

/** Several values in one cell, one a line (a table shows them as a column); none is null. */
const lines = (items: readonly string[]): string | null => (items.length ? items.join('\n') : null);

function statesText(type: StrategyType): string {
  if (type === 'custom') return "the exec config's, in file order (--driver exec)";
  return TYPE_STATES[type].map((d) => (d.onlyWith ? `${d.state} (with --${d.onlyWith.replace(/_/g, '-')})` : d.state)).join('\n');
}

export function strategyTypes(only?: StrategyType): ListResult {
  const rows: Value[][] = STRATEGY_TYPES.filter((t) => only === undefined || t === only).map((t) => {
    const { options, required } = describeTypeOptions(t);
    return [t, TYPES[t].alias, TYPES[t].endpoint, statesText(t), lines(options), lines(required)];
  });
  return list(TYPE_COLUMNS, rows);
}
