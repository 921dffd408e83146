/**
 * Stage planning as pure functions (SPEC §5): who gets a step, in which stage, with which window,
 * and the checks in their documented order.
 */
import { describe, expect, test } from '@jest/globals';
import {
  checkCombination,
  checkMaxParallel,
  planSteps,
  planStepsInOrder,
  type GroupRecord,
  type PlanRequest,
  type SubcloudRecord,
} from '../../src/domain/planning.js';
import { ClientCheckError, DcmError, OperationError } from '../../src/domain/errors.js';
import { ENDPOINTS, type Endpoint, type StrategyType, type SyncStatus } from '../../src/domain/types.js';
import fc from 'fast-check';

const GROUPS: GroupRecord[] = [
  { id: 1, name: 'Default', updateApplyType: 'parallel', maxParallelSubclouds: 2 },
  { id: 2, name: 'canary', updateApplyType: 'parallel', maxParallelSubclouds: 3 },
  { id: 3, name: 'rest', updateApplyType: 'serial', maxParallelSubclouds: 4 },
];

function sync(status: SyncStatus, over: Partial<Record<Endpoint, SyncStatus>> = {}): Record<Endpoint, SyncStatus> {
  const out = {} as Record<Endpoint, SyncStatus>;
  for (const e of ENDPOINTS) out[e] = status;
  return { ...out, ...over };
}

function sc(id: number, groupId: number, over: Partial<SubcloudRecord> = {}): SubcloudRecord {
  return {
    id,
    name: `s${id}`,
    groupId,
    management: 'managed',
    availability: 'online',
    deployStatus: 'complete',
    sync: sync('out-of-sync'),
    ...over,
  };
}

/** The example fleet of the issue. */
const FLEET: SubcloudRecord[] = [
  sc(1, 1),
  sc(2, 1, { management: 'unmanaged' }),
  sc(3, 1, { sync: sync('in-sync') }),
  sc(4, 2),
  sc(5, 2, { availability: 'offline' }),
  sc(6, 3),
  sc(7, 3),
  sc(8, 3),
];

const plan = (req: Partial<PlanRequest>, subclouds = FLEET, groups = GROUPS) =>
  planSteps({ type: 'patch', ...req }, groups, subclouds);

const steps = (p: ReturnType<typeof planSteps>) => p.steps.map((s) => [s.name, s.stage]);
const windows = (p: ReturnType<typeof planSteps>) => p.stages.map((s) => [s.stage, s.window]);

/** Run `fn`, expect it to throw an error of `cls` with exactly `message`; return it. */
function thrown(fn: () => unknown, cls: typeof DcmError, message: string): DcmError {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(cls);
  expect((err as Error).message).toBe(message);
  return err as DcmError;
}

describe('planSteps on the example fleet', () => {
  test('the whole fleet: one stage per group with a step, groups and subclouds in id order', () => {
    const p = plan({});
    expect(steps(p)).toEqual([
      ['s1', 1],
      ['s4', 2],
      ['s6', 3],
      ['s7', 3],
      ['s8', 3],
    ]);
    expect(p.steps.map((s) => s.subcloudId)).toEqual([1, 4, 6, 7, 8]);
    // Windows: the group's max parallel, 1 for a serial group.
    expect(windows(p)).toEqual([
      [1, 2],
      [2, 3],
      [3, 1],
    ]);
    expect(p.stages.map((s) => s.groupName)).toEqual(['Default', 'canary', 'rest']);
  });

  test('--group rest gives s6..s8 in one stage, window 1 (serial group)', () => {
    const p = plan({ groupName: 'rest' });
    expect(steps(p)).toEqual([
      ['s6', 1],
      ['s7', 1],
      ['s8', 1],
    ]);
    expect(windows(p)).toEqual([[1, 1]]);
  });

  test('--group takes a group id as well as a name', () => {
    expect(steps(plan({ groupName: '2' }))).toEqual([['s4', 1]]);
  });

  test('--group prefers a group named like a number over the group with that id', () => {
    const groups = [...GROUPS, { id: 4, name: '3', updateApplyType: 'parallel' as const, maxParallelSubclouds: 7 }];
    const p = plan({ groupName: '3' }, [...FLEET, sc(9, 4)], groups);
    expect(steps(p)).toEqual([['s9', 1]]);
    expect(windows(p)).toEqual([[1, 7]]);
  });

  test('a named cloud gives one step in stage 1 with its group window', () => {
    const p = plan({ cloudName: 's4' });
    expect(steps(p)).toEqual([['s4', 1]]);
    expect(windows(p)).toEqual([[1, 3]]);
  });

  test('strategy max parallel overrides the group window, but a serial group stays 1', () => {
    expect(windows(plan({ maxParallelSubclouds: 10 }))).toEqual([
      [1, 10],
      [2, 10],
      [3, 1],
    ]);
  });

  test('strategy apply type overrides the group apply type', () => {
    expect(windows(plan({ subcloudApplyType: 'serial' }))).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
    expect(windows(plan({ subcloudApplyType: 'parallel' }))).toEqual([
      [1, 2],
      [2, 3],
      [3, 4],
    ]);
    expect(windows(plan({ subcloudApplyType: 'parallel', maxParallelSubclouds: 5 }))).toEqual([
      [1, 5],
      [2, 5],
      [3, 5],
    ]);
    expect(windows(plan({ subcloudApplyType: 'serial', maxParallelSubclouds: 5 }))).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
  });

  test('input order does not matter: groups by id, then subclouds by id', () => {
    const shuffled = [FLEET[7], FLEET[3], FLEET[0], FLEET[5], FLEET[6], FLEET[1], FLEET[2], FLEET[4]];
    expect(steps(plan({}, shuffled))).toEqual(steps(plan({})));
  });

  test('a group without a step makes no stage: stages stay numbered 1, 2, …', () => {
    const fleet = FLEET.filter((s) => s.groupId !== 2);
    const p = plan({}, fleet);
    expect(steps(p)).toEqual([
      ['s1', 1],
      ['s6', 2],
      ['s7', 2],
      ['s8', 2],
    ]);
    expect(windows(p)).toEqual([
      [1, 2],
      [2, 1],
    ]);
  });

  test('only the endpoint of the type counts', () => {
    // s1 is in-sync for patching only: a patch strategy skips it, a firmware strategy takes it.
    const fleet = [sc(1, 1, { sync: sync('out-of-sync', { patching: 'in-sync' }) }), sc(2, 1)];
    expect(steps(plan({}, fleet))).toEqual([['s2', 1]]);
    expect(steps(planSteps({ type: 'firmware' }, GROUPS, fleet))).toEqual([
      ['s1', 1],
      ['s2', 1],
    ]);
  });
});

describe('eligibility', () => {
  test('unmanaged, offline and in-sync subclouds are skipped without error', () => {
    const names = plan({}).steps.map((s) => s.name);
    expect(names).not.toContain('s2');
    expect(names).not.toContain('s3');
    expect(names).not.toContain('s5');
  });

  test('--force takes in-sync subclouds for kubernetes and kube-rootca-update only', () => {
    for (const type of ['kubernetes', 'kube-rootca-update'] as const) {
      const p = planSteps({ type, force: true }, GROUPS, FLEET);
      expect(steps(p)).toEqual([
        ['s1', 1],
        ['s3', 1],
        ['s4', 2],
        ['s6', 3],
        ['s7', 3],
        ['s8', 3],
      ]);
      expect(steps(planSteps({ type, cloudName: 's3', force: true }, GROUPS, FLEET))).toEqual([['s3', 1]]);
    }
    for (const type of ['patch', 'sw-deploy', 'firmware'] as const) {
      expect(planSteps({ type, force: true }, GROUPS, FLEET).steps.map((s) => s.name)).not.toContain('s3');
    }
  });

  test('prestage takes managed, online subclouds whose deploy status is complete, in-sync or not', () => {
    const fleet = [...FLEET.slice(0, 5), sc(6, 3, { deployStatus: 'deploying' }), sc(7, 3), sc(8, 3)];
    expect(steps(planSteps({ type: 'prestage' }, GROUPS, fleet))).toEqual([
      ['s1', 1],
      ['s3', 1],
      ['s4', 2],
      ['s7', 3],
      ['s8', 3],
    ]);
  });

  test('an unknown endpoint on an unmanaged or offline subcloud is no error', () => {
    const fleet = [sc(1, 1), sc(2, 1, { management: 'unmanaged', sync: sync('unknown') }), sc(3, 1, { availability: 'offline', sync: sync('unknown') })];
    expect(steps(plan({}, fleet))).toEqual([['s1', 1]]);
  });
});

describe('errors of SPEC §5', () => {
  test('check 2: cloud_name with --group', () => {
    // dcmanager's client refuses it itself, and exits 1.
    const e = thrown(() => checkCombination({ type: 'patch', cloudName: 's1', groupName: 'rest' }), ClientCheckError, 'The cloud_name and group options are mutually exclusive.');
    expect(e.exitCode).toBe(1);
  });

  test('check 2: --group with --max-parallel-subclouds or --subcloud-apply-type', () => {
    // dcmanager's client words, one message per option.
    const cases: [object, string][] = [
      [{ maxParallelSubclouds: 3 }, 'The --max-parallel-subclouds options is not supported when --group option is applied.'],
      [{ subcloudApplyType: 'serial' as const }, 'The --subcloud-apply-type is not supported when --group option is applied.'],
    ];
    for (const [extra, message] of cases) {
      const e = thrown(() => checkCombination({ type: 'patch', groupName: 'rest', ...extra }), ClientCheckError, message);
      expect(e.exitCode).toBe(1);
    }
  });

  test('check 2 passes what may be combined', () => {
    expect(() => checkCombination({ type: 'patch' })).not.toThrow();
    expect(() => checkCombination({ type: 'patch', cloudName: 's1', maxParallelSubclouds: 3 })).not.toThrow();
    expect(() => checkCombination({ type: 'patch', groupName: 'rest' })).not.toThrow();
    expect(() => checkCombination({ type: 'patch', subcloudApplyType: 'serial', maxParallelSubclouds: 3 })).not.toThrow();
  });

  // The server's refusal (utils.validate_strategy_payload, a 400): exit 1, in its words.
  test('check 3: max parallel outside 1..5000 (prestage, and sw-deploy --with-prestage, 1..250)', () => {
    for (const v of [0, -1, 5001, 1.5, Number.NaN]) {
      const e = thrown(
        () => checkMaxParallel('patch', v),
        OperationError,
        `Invalid max-parallel-subclouds value: ${v}. For patch strategy, the value must be between 1 and 5000.`,
      );
      expect(e.exitCode).toBe(1);
    }
    thrown(() => checkMaxParallel('prestage', 251), OperationError, 'Invalid max-parallel-subclouds value: 251. For prestage, the value must be between 1 and 250.');
    thrown(() => checkMaxParallel('kubernetes', 5001), OperationError, 'Invalid max-parallel-subclouds value: 5001. For kubernetes strategy, the value must be between 1 and 5000.');
    thrown(() => checkMaxParallel('sw-deploy', 251, true), OperationError, 'Invalid max-parallel-subclouds value: 251. For prestage, the value must be between 1 and 250.');
    expect(() => checkMaxParallel('sw-deploy', 251)).not.toThrow();
    for (const v of [1, 250]) expect(() => checkMaxParallel('prestage', v)).not.toThrow();
    for (const v of [1, 5000, null, undefined]) expect(() => checkMaxParallel('patch', v)).not.toThrow();
  });

  test('check 4: unknown subcloud or group', () => {
    const e = thrown(() => plan({ cloudName: 'nope' }), OperationError, 'Subcloud nope does not exist');
    expect(e.exitCode).toBe(1);
    thrown(() => plan({ groupName: 'nope' }), OperationError, 'Subcloud group nope does not exist');
    thrown(() => plan({ groupName: '99' }), OperationError, 'Subcloud group 99 does not exist');
  });

  test('check 5: a named in-sync cloud, with each type label', () => {
    const labels: [PlanRequest['type'], string][] = [
      ['patch', 'patching'],
      ['sw-deploy', 'software deploy'],
      ['kubernetes', 'kubernetes update'],
      ['kube-rootca-update', 'kube rootca update'],
      ['firmware', 'firmware update'],
    ];
    for (const [type, label] of labels) {
      thrown(() => planSteps({ type, cloudName: 's3' }, GROUPS, FLEET), OperationError, `Subcloud s3 does not require ${label}`);
    }
    // --force does not override for patch.
    thrown(() => plan({ cloudName: 's3', force: true }), OperationError, 'Subcloud s3 does not require patching');
  });

  test('check 6: a managed, online candidate with an unknown endpoint', () => {
    const fleet = [sc(1, 1), sc(2, 1, { sync: sync('out-of-sync', { patching: 'unknown' }) })];
    thrown(() => plan({}, fleet), OperationError, 'Patching sync status is unknown for one or more subclouds');
    // Another endpoint unknown: no matter for patch.
    expect(steps(plan({}, [sc(1, 1, { sync: sync('out-of-sync', { firmware: 'unknown' }) })]))).toEqual([['s1', 1]]);
    // Only the candidates of the named group count.
    const grouped = [sc(1, 1, { sync: sync('unknown') }), sc(2, 2)];
    expect(steps(plan({ groupName: 'canary' }, grouped))).toEqual([['s2', 1]]);
    thrown(() => plan({ groupName: 'Default' }, grouped), OperationError, 'Patching sync status is unknown for one or more subclouds');
  });

  test('check 7: nothing to do', () => {
    thrown(() => plan({}, []), OperationError, 'Strategy has no steps to apply');
    thrown(() => plan({ cloudName: 's2' }), OperationError, 'Strategy has no steps to apply'); // unmanaged
    thrown(() => plan({ cloudName: 's5' }), OperationError, 'Strategy has no steps to apply'); // offline
    thrown(() => plan({}, [FLEET[1], FLEET[2], FLEET[4]]), OperationError, 'Strategy has no steps to apply');
  });

  test('checks run in order: 4 before 5 before 6 before 7', () => {
    // Unknown sync (6) and no step left (7): 6 wins.
    thrown(() => plan({}, [sc(1, 1, { sync: sync('unknown') })]), OperationError, 'Patching sync status is unknown for one or more subclouds');
    // Named in-sync cloud (5) with an unknown elsewhere in the fleet: 5 wins.
    thrown(() => plan({ cloudName: 's3' }, [...FLEET, sc(9, 1, { sync: sync('unknown') })]), OperationError, 'Subcloud s3 does not require patching');
  });
});

describe('planStepsInOrder: the plan of a create that reads the fleet a page at a time', () => {
  // Whatever the fleet, the same steps, stages and errors as planSteps given every subcloud.
  const outcome = (f: () => { steps: unknown[]; stages: unknown[] }) => {
    try {
      return f();
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
  const inOrder = (req: PlanRequest, fleet: SubcloudRecord[]) => {
    const sorted = [...fleet].sort((a, b) => a.groupId - b.groupId || a.id - b.id);
    const gen = planStepsInOrder(req, GROUPS, sorted);
    const steps: unknown[] = [];
    for (let r = gen.next(); ; r = gen.next()) {
      if (r.done) return { steps, stages: r.value };
      steps.push(r.value);
    }
  };
  test('matches planSteps on random fleets, types, groups and windows', () => {
    const statuses: SyncStatus[] = ['in-sync', 'out-of-sync', 'unknown'];
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            groupId: fc.constantFrom(...GROUPS.map((g) => g.id)),
            management: fc.constantFrom('managed', 'unmanaged'),
            availability: fc.constantFrom('online', 'offline'),
            deployStatus: fc.constantFrom('complete', 'secondary'),
            status: fc.constantFrom(...statuses, 'out-of-sync', 'out-of-sync', 'in-sync'),
          }),
          { maxLength: 30 },
        ),
        fc.constantFrom<StrategyType>('patch', 'prestage', 'kubernetes'),
        fc.option(fc.constantFrom(...GROUPS.map((g) => g.name), 'nope'), { nil: null }),
        fc.option(fc.integer({ min: 1, max: 9 }), { nil: null }),
        fc.boolean(),
        (rows, type, groupName, maxParallelSubclouds, force) => {
          const fleet = rows.map((r, i) =>
            sc(i + 1, r.groupId, { management: r.management, availability: r.availability, deployStatus: r.deployStatus, sync: sync(r.status as SyncStatus) }),
          );
          const req: PlanRequest = { type, groupName, maxParallelSubclouds: groupName ? null : maxParallelSubclouds, force };
          expect(outcome(() => inOrder(req, fleet))).toEqual(outcome(() => planSteps(req, GROUPS, fleet)));
        },
      ),
      { numRuns: 300 },
    );
  });
});
