/**
 * Runs an earlier orchestrator left `running` (it was killed, or stopped waiting): the driver says
 * whether each is still going or ended meanwhile (to be waited for, never started again), or was
 * cut off (to run again as the next attempt). Only the steps of those runs are read, not the fleet.
 * What is done with the answers (the registry, the slots) stays with the orchestrator.
 */
import type { Driver, OperationRequest, OperationResult } from '../drivers/driver.js';
import type { Db } from '../store/open.js';
import { leftRunning, operatorEnd, type LeftRunRow } from '../store/runs.js';
import { stepsByIds, type CursorStep } from '../store/cursor.js';

export interface Adopted {
  step: CursorStep;
  left: LeftRunRow;
  result: Promise<OperationResult>;
}

export interface LeftRuns {
  /** By step id: runs to wait for once their subcloud has its slot. */
  adopted: Map<number, Adopted>;
  /** History rows of runs that were cut off: to be marked `interrupted` in one fenced commit. */
  interrupted: number[];
}

/** `request(step, left)`: the request the run would have been started with (for the driver's rules). */
export async function adoptLeftRuns(
  db: Db,
  driver: Driver,
  request: (step: CursorStep, left: LeftRunRow) => Promise<OperationRequest>,
  /** One of several workers: only the runs of the steps it holds, but those it already waits for. */
  only?: { owner: number; skip: (stepId: number) => boolean; host: string },
  /** A run another host started: its end as that host writes it (remote-runs.ts). */
  elsewhere?: (left: LeftRunRow, req: OperationRequest, here: string) => Promise<OperationResult> | null,
): Promise<LeftRuns> {
  const left = only ? (await leftRunning(db, only.owner)).filter((l) => !only.skip(l.stepId)) : await leftRunning(db);
  const byId = await stepsByIds(db, left.map((l) => l.stepId));
  const out: LeftRuns = { adopted: new Map(), interrupted: [] };
  for (const l of left) {
    const step = byId.get(l.stepId);
    // A row whose step moved on (or a driver that cannot adopt) was cut off: it runs again.
    let req: OperationRequest | null = null;
    if (step && step.state === l.state && only && l.host !== null && elsewhere && driver.remote) {
      req = await request(step, l);
      // Started on another host: never run again while it may still go there. Or on this one,
      // whose launcher was lost with it, and the operator has said how it ended (`strategy-step
      // resolve`): that end, before what this host's files say (nothing, if the host went down).
      if (l.host !== only.host || await operatorEnd(db, driver.remote(l, req).key)) {
        const result = elsewhere(l, req, only.host);
        if (result) {
          out.adopted.set(l.stepId, { step, left: l, result });
          continue;
        }
      }
    }
    const adoption = step && driver.adopt && step.state === l.state ? driver.adopt(l, req ?? await request(step, l)) : null;
    if (adoption?.kind === 'wait') out.adopted.set(l.stepId, { step: step!, left: l, result: adoption.result });
    else out.interrupted.push(l.historyId);
  }
  return out;
}
