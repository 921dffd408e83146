/**
 * A run's request (src/orchestrator/run-request.ts): what the driver is handed, its progress
 * escaped as outside text, its fields and labels read only for a driver that may read them, its
 * abort signal made when asked for, and nothing of dcm's own in a copy of it.
 */
import { afterEach, expect, test } from '@jest/globals';
import type { Driver } from '../../src/drivers/driver.js';
import { ConfigBook } from '../../src/domain/strategy-config.js';
import { Registry } from '../../src/orchestrator/registry.js';
import { RunRequests, type RunContext } from '../../src/orchestrator/run-request.js';
import { orchestratorRuntime } from '../../src/orchestrator/runtime.js';
import { realRuntime } from '../../src/platform/runtime.js';
import type { CursorStep } from '../../src/store/cursor.js';
import { updateSubcloud } from '../../src/store/subclouds.js';
import { strategyOf } from '../helpers/store.js';

let cleanup = () => {};
afterEach(() => cleanup());

const context = (said: string[]): RunContext => ({
  type: 'patch',
  states: ['installing license', 'updating patches'],
  campaign: 'c1',
  extra: {},
  config: new ConfigBook(undefined, []),
  resumed: false,
  failures: 0,
  fence: 'f-1',
  onStarted: () => {},
  onProgress: (t) => said.push(t),
});

const stepOf = (id: number, cloud: string): CursorStep => ({ id, subcloudId: id, cloud, stage: 1, state: 'initial', attempt: 0, retried: false }) as CursorStep;

async function requestsFor(labelKeys?: readonly string[]) {
  const s = await strategyOf(['a', 'b']);
  cleanup = s.cleanup;
  await updateSubcloud(s.db, 2, { labels: { rack: '7' } });
  const runs = new RunRequests(orchestratorRuntime(realRuntime(), s.db, { labelKeys } as unknown as Driver));
  await runs.readLabelled();
  return runs;
}

test("the request carries the run's facts; its progress reaches dcm escaped; a copy holds no getter's value nor dcm's worker", async () => {
  const runs = await requestsFor();
  const worker = new Registry(() => 0).make(stepOf(1, 'a'), 'updating patches', 2, 7);
  const said: string[] = [];
  const req = await runs.request(worker, context(said));
  expect(req).toMatchObject({ cloud: 'a', type: 'patch', state: 'updating patches', stateIndex: 1, attempt: 2, stage: 1, campaign: 'c1', fence: 'f-1' });
  req.onProgress!('40% \x1b]0;PWN\x07done');
  expect(said).toEqual(['40% \\x1b]0;PWN\\x07done']);
  expect(req.subcloud).toMatchObject({ name: 'a' });
  expect(req.labels).toEqual({});
  expect(Object.keys({ ...req })).not.toContain('subcloud');
  expect(JSON.stringify(req)).not.toContain('historyId');
});

test('a driver that names its labels gets them for a subcloud that has one, no fields; the signal is made once, aborted if the run was abandoned', async () => {
  const runs = await requestsFor(['rack']);
  const registry = new Registry(() => 0);
  const plain = await runs.request(registry.make(stepOf(1, 'a'), 'installing license', 1, 1), context([]));
  expect(plain.labels).toEqual({});
  expect(() => plain.subcloud).toThrow('the fields of a were not read');
  const labelled = await runs.request(registry.make(stepOf(2, 'b'), 'installing license', 1, 2), context([]));
  expect(labelled.labels).toEqual({ rack: '7' });

  const worker = registry.make(stepOf(1, 'a'), 'installing license', 1, 3);
  const req = await runs.request(worker, context([]));
  expect(worker.controller).toBeNull();
  expect(req.signal).toBe(req.signal);
  expect(req.signal.aborted).toBe(false);
  const late = registry.make(stepOf(2, 'b'), 'installing license', 1, 4);
  late.abandoned = true;
  expect((await runs.request(late, context([]))).signal.aborted).toBe(true);
});
