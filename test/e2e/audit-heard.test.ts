/**
 * Issue 49, item 3: an audit that disagrees is heard. A strategy whose sites' audit (after each
 * one's last state) disagrees with what it meant to leave ends `complete`, and says so: the closing
 * summary, `strategy status`, the report's cards, an event, on_event, and an exit code of its own
 * (5; `status --watch` exits as apply did), unless it was created with `--audit-disagrees-ok`.
 * Real processes: the built CLI, the exec driver running each state and the audit as commands.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm } from '../helpers/cli.js';
import { execFixture, type ExecFixture } from '../helpers/exec.js';
import { dcmQuickOk } from '../helpers/quick.js';

let f: ExecFixture;
afterEach(() => f?.cleanup());
const db = () => ['--db', f.db];

/** Three sites; each state a command; the audit prints `sites/<cloud>.json`; on_event appends to told.jsonl. */
function fleet(createArgs: string[] = []): { told: string } {
  f = execFixture();
  const sites = path.join(f.dir, 'sites');
  fs.mkdirSync(sites);
  const told = path.join(f.dir, 'told.jsonl');
  const cfg = f.config(`
states:
  "*": "true"
audit: [cat, "${sites}/{cloud}.json"]
on_event: cat >> ${told}
`);
  dcmQuickOk([...db(), 'subcloud', 'add', 'good', 'stale', 'good2', '--sync', 'all=out-of-sync']);
  fs.writeFileSync(path.join(sites, 'good.json'), JSON.stringify({ sync: { patching: 'in-sync' } }));
  fs.writeFileSync(path.join(sites, 'good2.json'), JSON.stringify({ sync: { patching: 'in-sync' } }));
  fs.writeFileSync(path.join(sites, 'stale.json'), JSON.stringify({ sync: { patching: 'out-of-sync' } }));
  dcmQuickOk([...db(), 'strategy', 'create', '--type', 'patch', '--patch-id', 'P1', '--driver', 'exec', '--exec-config', cfg, ...createArgs]);
  return { told };
}

const STALE = 'stale: warning: audit: the site reports patching out-of-sync';
const told = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) : []);

describe('an audit that disagrees is heard', () => {
  test('exit 5, the closing summary, status, the report card, the event and on_event', () => {
    const { told: out } = fleet();
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(/^strategy complete: 3 complete in .*\naudit disagrees on 1 complete subcloud\(s\) \(exit 5\):\n {2}stale: warning: audit: the site reports patching out-of-sync\n$/m);
    expect(dcm([...db(), 'strategy', 'show', '-f', 'value', '-c', 'state']).stdout).toBe('complete\n');

    const status = JSON.parse(dcm([...db(), 'strategy', 'status', '-f', 'json']).stdout) as Record<string, unknown>;
    expect(status.audit).toBe(`1 complete subcloud(s) whose audit disagrees (exit 5)\n${STALE}`);
    // `status --watch` on the ended strategy exits as apply did.
    expect(dcm([...db(), 'strategy', 'status', '--watch'], { env: { TERM: 'dumb' } }).code).toBe(5);

    const events = JSON.parse(dcm([...db(), 'strategy', 'events', '-f', 'json']).stdout) as { event: string; details: string }[];
    const audit = events.find((e) => e.event === 'audit disagrees')!;
    expect(audit.details).toBe('1 site(s) complete whose audit disagrees (exit 5): stale (warning: audit: the site reports patching out-of-sync)');
    expect(events.find((e) => e.event === 'apply ended')!.details).toBe('complete (exit 5)');
    expect(told(out).map((n) => n.notice)).toEqual(['audit disagrees', 'strategy complete']);
    expect(told(out)[0].details).toBe(audit.details);

    const html = path.join(f.dir, 'report.html');
    expect(dcm([...db(), 'strategy', 'report', '--html', html]).code).toBe(0);
    const page = fs.readFileSync(html, 'utf8');
    expect(page).toContain('<div class="card bad" data-key="audit disagrees"><div class="n">1</div><div class="k">audit disagrees</div></div>');
    expect(page).toContain('yes: a disagreement is a warning, and apply exits 5');
  }, 60_000);

  test('--audit-disagrees-ok: exit 0, and it is said all the same', () => {
    fleet(['--audit-disagrees-ok']);
    const r = dcm([...db(), 'strategy', 'apply'], { env: f.env });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`audit disagrees on 1 complete subcloud(s) (exit 0: --audit-disagrees-ok):\n  ${STALE}\n`);
    const status = JSON.parse(dcm([...db(), 'strategy', 'status', '-f', 'json']).stdout) as Record<string, unknown>;
    expect(status.audit).toBe(`1 complete subcloud(s) whose audit disagrees (exit 0: --audit-disagrees-ok)\n${STALE}`);
  }, 60_000);

  test('the option is checked: it needs an audit, and excludes --require-audit', () => {
    f = execFixture();
    dcmQuickOk([...db(), 'subcloud', 'add', 's1']);
    const noAudit = dcm([...db(), 'strategy', 'create', '--type', 'patch', '--audit-disagrees-ok']);
    expect([noAudit.code, noAudit.stderr]).toEqual([2, 'error: --audit-disagrees-ok needs an audit: give --sim-audit\n']);
    const both = dcm([...db(), 'strategy', 'create', '--type', 'patch', '--sim-audit', '--require-audit', '--audit-disagrees-ok']);
    expect([both.code, both.stderr]).toEqual([2, 'error: --audit-disagrees-ok and --require-audit exclude each other: a disagreeing audit either fails its step or does not\n']);
    expect(dcm([...db(), 'strategy', 'show']).code).toBe(1);
  });
});
