/**
 * A driver's words as dcm passes them on (src/drivers/visible.ts): a run's reason and details, an
 * adopted run's result, an audit's failure and a site's software version, escaped and cut;
 * everything else of the driver is its own. A run's progress is escaped by its request
 * (test/orchestrator/run-request.test.ts).
 */
import { expect, test } from '@jest/globals';
import { visibleDriver } from '../../src/drivers/visible.js';
import type { Adoption, AuditOutcome, AuditRequest, Driver, LeftRun, OperationRequest, OperationResult } from '../../src/drivers/driver.js';

const HOSTILE = 'x\x1b]0;PWN\x07\x1b[31mred';
const SHOWN = 'x\\x1b]0;PWN\\x07\\x1b[31mred';

class Fake implements Driver {
  closed = 0;
  readonly labelKeys = ['k'];
  constructor(private readonly result: OperationResult) {}
  async run(req: OperationRequest): Promise<OperationResult> {
    req.onProgress?.(`50% ${HOSTILE}`);
    return this.result;
  }
  adopt(_left: LeftRun, _req: OperationRequest): Adoption {
    return { kind: 'wait', result: Promise.resolve(this.result) };
  }
  async audit(_req: AuditRequest): Promise<AuditOutcome> {
    return { ok: true, report: { software_version: `24.09${HOSTILE}`, availability: 'online' } };
  }
  costs() {
    return { runs: this.closed };
  }
  async close(): Promise<void> {
    this.closed++;
  }
}

const req = (onProgress?: (t: string) => void) => ({ cloud: 'c', state: 's', onProgress }) as unknown as OperationRequest;

test("a run's reason, an adopted run's result, a site's version: escaped; the request reaches the driver as made", async () => {
  const said: string[] = [];
  const d = visibleDriver(new Fake({ kind: 'failed', reason: `exit 4: ${HOSTILE}` }));
  expect(await d.run(req((t) => said.push(t)))).toEqual({ kind: 'failed', reason: `exit 4: ${SHOWN}` });
  expect(said).toEqual([`50% ${HOSTILE}`]);
  const a = d.adopt!({} as never, req());
  expect(a.kind === 'wait' && (await a.result)).toEqual({ kind: 'failed', reason: `exit 4: ${SHOWN}` });
  expect(await d.audit!({} as never)).toEqual({ ok: true, report: { software_version: `24.09${SHOWN}`, availability: 'online' } });
});

test('details of a next are escaped and cut to 200; the rest of the driver is its own', async () => {
  const fake = new Fake({ kind: 'next', details: `${'\x1b'.repeat(300)}` });
  const d = visibleDriver(fake);
  const r = await d.run(req());
  expect(r.kind === 'next' && r.details).toMatch(/^(\\x1b){49}…$/);
  await d.close();
  expect(fake.closed).toBe(1);
  expect(d.costs!()).toEqual({ runs: 1 });
  expect(d.labelKeys).toEqual(['k']);
});
