/**
 * A simulated latency longer than a Node timer can wait (2^31 - 1 ms) still takes its time: it is
 * not cut to 1 ms with a TimeoutOverflowWarning (issue 7). Fake timers stand in for the weeks.
 */
import { afterEach, expect, jest, test } from '@jest/globals';
import { SimDriver, simSettings } from '../../../src/drivers/sim/index.js';
import { statesOf } from '../../../src/domain/types.js';
import { openDb } from '../../../src/store/open.js';
import { tempDir } from '../../helpers/cli.js';

const t = tempDir('dcm-sim-sleep-');
afterEach(() => {
  jest.useRealTimers();
  t.cleanup();
});

test('a 30-day latency waits 30 days, across several timer spans, without a warning', async () => {
  (await openDb(t.db, { create: true }))!.close();
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
  const day = 24 * 3_600_000;
  const driver = await SimDriver.open(t.db, simSettings({ sim_latency_min_ms: 30 * day, sim_latency_max_ms: 30 * day, sim_seed: 1 }));
  let settled = false;
  const states = statesOf('patch');
  const run = driver
    .run({ cloud: 's1', type: 'patch', state: states[0], stateIndex: 0, states, attempt: 1, campaign: 'c', extra: {}, options: {}, signal: new AbortController().signal })
    .finally(() => (settled = true));
  await jest.advanceTimersByTimeAsync(2 ** 31 - 1);
  expect(settled).toBe(false);
  await jest.advanceTimersByTimeAsync(29 * day - (2 ** 31 - 1));
  expect(settled).toBe(false);
  await jest.advanceTimersByTimeAsync(day);
  jest.useRealTimers();
  await expect(run).resolves.toEqual({ kind: 'next' });
  expect(settled).toBe(true);
  await driver.close();
  process.off('warning', onWarning);
  expect(warnings).not.toContain('TimeoutOverflowWarning');
});
