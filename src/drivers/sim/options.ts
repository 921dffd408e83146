/** The sim driver's `strategy create` options (SPEC §7), checked and turned into extra args. */
import { UsageError } from '../../domain/errors.js';
import { durationRangeOption } from '../../domain/durations.js';
import { didYouMean } from '../../domain/choices.js';
import type { ExtraArgs } from '../../domain/options.js';
import type { DriverCreateInput } from '../index.js';


export function simExtraArgs(input: DriverCreateInput): ExtraArgs {
  const raw = input.raw as { simLatency?: string; simFailRate?: string; simSeed?: string; simFail?: string[] };
  if (input.type === 'custom') throw new UsageError('--type custom runs the states of an exec config: use --driver exec --exec-config FILE');
  const out: ExtraArgs = {};
  const latency = durationRangeOption('--sim-latency', raw.simLatency ?? '200ms..1s');
  out.sim_latency_min_ms = latency.min;
  out.sim_latency_max_ms = latency.max;

  const rate = raw.simFailRate === undefined ? 0 : Number(raw.simFailRate);
  if (raw.simFailRate !== undefined && (raw.simFailRate.trim() === '' || !(rate >= 0 && rate <= 1))) {
    throw new UsageError(`Invalid --sim-fail-rate value: ${raw.simFailRate}. It must be between 0 and 1`);
  }
  out.sim_fail_rate = rate;

  if (raw.simSeed !== undefined && !/^\d{1,15}$/.test(raw.simSeed)) {
    throw new UsageError(`Invalid --sim-seed value: ${raw.simSeed}. It must be a non-negative integer`);
  }
  out.sim_seed = raw.simSeed !== undefined ? Number(raw.simSeed) : input.seed;

  const fails: string[] = [];
  for (const item of raw.simFail ?? []) {
    const eq = item.indexOf('=');
    if (eq <= 0 || eq === item.length - 1) {
      throw new UsageError(`Invalid --sim-fail value: ${item}. Use CLOUD=STATE`);
    }
    const state = item.slice(eq + 1);
    if (input.states && !input.states.includes(state)) {
      throw new UsageError(
        `Invalid --sim-fail state '${state}' for ${input.type}${didYouMean(state, input.states)}; its states are: ${input.states.join(', ')}`,
      );
    }
    fails.push(item);
  }
  out.sim_fail = fails;
  return out;
}
