import { describe, expect, test } from '@jest/globals';
import { admit, finish, type Site, type SiteRequest } from '../../../src/drivers/sim/site.js';
import { statesOf } from '../../../src/domain/types.js';

const STATES = statesOf('patch');
const req = (stateIndex: number, attempt = 1, campaign = 'c1'): SiteRequest => ({
  cloud: 's1',
  campaign,
  state: STATES[stateIndex],
  stateIndex,
  attempt,
});

/** Run states 0..n-1 to completion on a fresh site, as one process would. */
function through(n: number, owner = 'me'): Site {
  let site: Site | undefined;
  for (let i = 0; i < n; i++) {
    const a = admit(site, req(i), owner);
    if (!a.ok) throw new Error(a.reason);
    site = finish(a.site, req(i), true, a.replay);
  }
  return site!;
}

describe('simulated subcloud', () => {
  test('walks the states in order; the VIM strategy goes none → building → ready-to-apply → applying → applied', () => {
    let site: Site | undefined;
    const vims: string[] = [];
    for (let i = 0; i < STATES.length; i++) {
      const a = admit(site, req(i), 'me');
      expect(a.ok).toBe(true);
      if (!a.ok) return;
      vims.push(a.site.vim);
      site = finish(a.site, req(i), true, a.replay);
      vims.push(site.vim);
    }
    expect(site!.done).toBe(STATES.length - 1);
    expect(vims.slice(4, 8)).toEqual(['building', 'ready-to-apply', 'applying', 'applied']);
  });

  test("the seed's race: the create state started again after it finished fails with unexpected state ready-to-apply", () => {
    const site = through(3); // pre check, updating patches, creating VIM patch strategy
    const again = admit(site, req(2), 'me');
    expect(again).toEqual({ ok: false, reason: 'unexpected state ready-to-apply' });
  });

  test('a second operation while one runs on the subcloud fails there', () => {
    const site = through(2);
    const first = admit(site, req(2), 'me');
    expect(first.ok).toBe(true);
    if (!first.ok) return;
    expect(admit(first.site, req(2), 'me')).toEqual({ ok: false, reason: 'unexpected state building' });
    expect(admit(first.site, req(3), 'me')).toEqual({ ok: false, reason: 'unexpected state building' });
  });

  test('out of order fails', () => {
    expect(admit(through(1), req(3), 'me')).toMatchObject({ ok: false });
  });

  test('an operation left running by a dead process runs again (re-entrant)', () => {
    const site = through(2);
    const first = admit(site, req(2), 'dead-process');
    if (!first.ok) throw new Error('admit');
    // The process died with the operation running; the next process runs it as attempt 2.
    const again = admit(first.site, req(2, 2), 'me');
    expect(again.ok).toBe(true);
    if (!again.ok) return;
    expect(again.site.vim).toBe('building');
    expect(finish(again.site, req(2, 2), true, again.replay).vim).toBe('ready-to-apply');
  });

  test('an operation the subcloud finished but the orchestrator did not record is accepted again as attempt 2 only', () => {
    const site = through(3);
    expect(admit(site, req(2, 1), 'me').ok).toBe(false);
    const replay = admit(site, req(2, 2), 'me');
    expect(replay).toMatchObject({ ok: true, replay: true });
    if (!replay.ok) return;
    expect(finish(replay.site, req(2, 2), true, true)).toMatchObject({ done: 2, vim: 'ready-to-apply', busyState: null });
  });

  test('a new strategy starts the subcloud afresh', () => {
    const site = through(STATES.length);
    expect(admit(site, req(0, 1, 'c2'), 'me')).toMatchObject({ ok: true });
  });
});
