/**
 * A plan you can pin (`strategy create --dry-run` prints the plan's digest; `--plan DIGEST` creates
 * that plan or refuses): refused after a probe took one site out of the plan, naming it, with
 * nothing written; accepted with the same digest once the site is back; the digest kept in the
 * record and the report. The digests of dry runs and creates over many fleets agree in
 * test/commands/dryrun.test.ts.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcm } from '../helpers/cli.js';
import { tempPerTest } from '../helpers/history.js';
import { dcmQuickOk } from '../helpers/quick.js';

const temp = tempPerTest();

describe('strategy create --plan DIGEST', () => {
  test('refused after a probe changed one site, naming it, nothing written; accepted with the same digest', () => {
    const { dir, db } = temp();
    // The reviewed plans are kept in the user's state folder: this test's own.
    const env = { XDG_STATE_HOME: path.join(dir, 'state') };
    const run = (args: string[]) => dcm(['--db', db, ...args], { env });
    dcmQuickOk(['--db', db, 'subcloud', 'add', 's1', 's2', 's3', 's4']);
    const create = ['strategy', 'create', '--type', 'patch', '--max-parallel-subclouds', '2', '--start-rate', '30/min'];
    const dry = run([...create, '--dry-run', '-f', 'json']);
    expect(dry.code).toBe(0);
    const digest = (JSON.parse(dry.stdout) as { stage: unknown; 'plan digest': string | null }[]).at(-1)!['plan digest']!;
    expect(digest).toMatch(/^[0-9a-f]{12}$/);
    // The same command plans the same: the digest does not move by itself (the sim's seed is drawn anew each time).
    expect((JSON.parse(run([...create, '--dry-run', '-f', 'json']).stdout) as { 'plan digest': string | null }[]).at(-1)!['plan digest']).toBe(digest);

    // s3 stops answering, and a probe records it offline: create would leave it out.
    dcmQuickOk(['--db', db, 'subcloud', 'update', 's3', '--label', 'sim_unreachable=1']);
    run(['subcloud', 'probe', 's3']);
    expect(JSON.parse(dcmQuickOk(['--db', db, 'subcloud', 'show', 's3', '-f', 'json']).stdout).availability).toBe('offline');
    const before = fs.readFileSync(db);
    const refused = run([...create, '--plan', digest]);
    expect(refused.code).toBe(1);
    const lines = refused.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^error: the plan differs from the one reviewed \\(--plan ${digest}, now [0-9a-f]{12}\\): subcloud s3 left the plan \\(it was in stage 1\\); nothing was created`));
    expect(fs.readFileSync(db).equals(before)).toBe(true);
    expect(run(['strategy', 'show']).code).toBe(1);
    // An option changed is named too.
    const other = run([...create.slice(0, -1), '60/min', '--plan', digest]);
    expect(other.stderr).toMatch(/stage 1 start rate: .*30.* -> .*60/);

    // Back: the same digest is accepted, and kept with the strategy.
    dcmQuickOk(['--db', db, 'subcloud', 'update', 's3', '--label', 'sim_unreachable=']);
    run(['subcloud', 'probe', 's3']);
    const made = run([...create, '--plan', digest, '-f', 'json']);
    expect([made.code, made.stderr]).toEqual([0, '']);
    expect(JSON.parse(made.stdout).state).toBe('initial');
    const html = run(['strategy', 'report', '--html', '-']).stdout;
    expect(html).toContain(`${digest} (pinned with --plan)`);
  });

  test('a digest not as printed is a usage error; a plan reviewed elsewhere is refused without its details', () => {
    const { dir, db } = temp();
    dcmQuickOk(['--db', db, 'subcloud', 'add', 's1', 's2']);
    const bad = dcm(['--db', db, 'strategy', 'create', '--type', 'patch', '--plan', 'abc']);
    expect([bad.code, bad.stderr.trim()]).toEqual([2, "error: invalid --plan 'abc': give the plan digest strategy create --dry-run printed (12 hex digits)"]);
    const elsewhere = dcm(['--db', db, 'strategy', 'create', '--type', 'patch', '--plan', '0123456789ab'], { env: { XDG_STATE_HOME: path.join(dir, 'none') } });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain('the plan reviewed is not kept on this machine, so what changed cannot be named');
    expect(dcm(['--db', db, 'strategy', 'show']).code).toBe(1);
  });
});
