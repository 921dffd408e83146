/**
 * `dcm strategy types` says what create and apply do: the reference's list (docs/reference/strategies.md,
 * generated from it by `npm run docs`) is its output, each option
 * it lists for a type is one create takes for that type (and refuses for the others), and a
 * required option is refused when missing. Its formats are pinned by the golden files.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { dcmOk, ROOT, tempDir } from '../helpers/cli.js';
import { run } from '../helpers/inprocess.js';
import { dcmQuickOk } from '../helpers/quick.js';

interface TypeRow {
  type: string;
  alias: string;
  'sync endpoint': string | null;
  states: string;
  options: string | null;
  'required options': string | null;
}

const rows = JSON.parse(dcmQuickOk(['strategy', 'types', '-f', 'json']).stdout) as TypeRow[];
const flagsOf = (r: TypeRow) => (r.options ?? '').split('\n').filter(Boolean).map((o) => o.split(' ')[0]);

/** The reference's table, as it is written: states by arrows, each option in backticks. */
function markdown(types: TypeRow[]): string {
  const code = (s: string) => `\`${s}\``;
  const cell = (v: string | null, each: (s: string) => string, sep: string) => (v === null ? '' : v.split('\n').map(each).join(sep));
  const lines = ['| type | alias | sync endpoint | states | options | required options |', '|---|---|---|---|---|---|'];
  for (const r of types) {
    lines.push(
      `| ${code(r.type)} | ${code(r.alias)} | ${r['sync endpoint'] ?? '—'} | ${cell(r.states, String, ' → ')} | ` +
        `${cell(r.options, code, ', ')} | ${cell(r['required options'], code, ', ')} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

describe('strategy types', () => {
  test('the reference lists the types as the command prints them', () => {
    expect(rows.map((r) => r.type)).toEqual(['patch', 'sw-deploy', 'kubernetes', 'kube-rootca-update', 'firmware', 'prestage', 'custom']);
    expect(fs.readFileSync(path.join(ROOT, 'docs', 'reference', 'strategies.md'), 'utf8')).toContain(markdown(rows));
  });

  test('one type, by its argument; an unknown one is a usage error naming the types', async () => {
    const r = await run(['strategy', 'types', 'kubernetes', '-f', 'value', '-c', 'states']);
    expect(r.stdout).toBe('kube upgrade pre check\nkube creating vim kube upgrade strategy\nkube applying vim kube upgrade strategy\n');
    const bad = await run(['strategy', 'types', 'patches']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: .*'patches'.*choose from patch, sw-deploy, .*custom\n$/);
  });

  test('each listed option is one create takes for that type, and refuses for a type that does not list it', async () => {
    const all = [...new Set(rows.flatMap(flagsOf))];
    const options = rows.flatMap((r) => (r.options ?? '').split('\n'));
    const t = tempDir();
    try {
      for (const r of rows.filter((x) => x.type !== 'custom')) {
        const mine = flagsOf(r);
        for (const flag of all) {
          // As listed: `--patch-id ID` takes a value (a release's form fits every one), `--snapshot` none.
          const takesValue = options.some((o) => o.startsWith(`${flag} `) && !o.startsWith(`${flag} (`));
          const args = ['--db', t.db, 'strategy', 'create', '--type', r.type, '--dry-run', flag, ...(takesValue ? ['24.09'] : [])];
          const out = await run(args);
          const refused = out.stderr.includes(`${flag} is not an option of strategy type ${r.type}`);
          expect([r.type, flag, refused]).toEqual([r.type, flag, !mine.includes(flag)]);
        }
      }
      // A dry run reads and writes nothing: no file was made.
      expect(fs.existsSync(t.db)).toBe(false);
    } finally {
      t.cleanup();
    }
  });

  test('a required option is refused when missing, and not when an exception is given', async () => {
    const sw = rows.find((r) => r.type === 'sw-deploy')!;
    expect(sw['required options']).toBe('--release-id unless --rollback or --cleanup');
    const t = tempDir();
    try {
      const missing = await run(['--db', t.db, 'strategy', 'create', '--type', 'sw-deploy', '--dry-run']);
      expect([missing.code, missing.stderr]).toEqual([1, 'error: The --release-id is required to create a deploy strategy.\n']);
      for (const unless of ['--rollback', '--cleanup']) {
        const r = await run(['--db', t.db, 'strategy', 'create', '--type', 'sw-deploy', '--dry-run', unless]);
        expect(r.stderr).not.toContain('--release-id is required');
      }
    } finally {
      t.cleanup();
    }
  });

  test('kube-rootca-update walks the certificate states only with --cert-file, as listed', () => {
    const k = rows.find((r) => r.type === 'kube-rootca-update')!;
    const marked = k.states.split('\n').filter((s) => s.endsWith(' (with --cert-file)'));
    expect(marked).toEqual(['kube rootca update start (with --cert-file)', 'kube rootca update upload cert (with --cert-file)']);
    const t = tempDir();
    try {
      dcmQuickOk(['--db', t.db, 'subcloud', 'add', 's1']);
      const states = (extra: string[]) => {
        dcmQuickOk(['--db', t.db, 'strategy', 'create', '--type', 'kube-rootca-update', '--sim-latency', '0', ...extra]);
        dcmOk(['--db', t.db, 'strategy', 'apply', '-q']);
        const seen = JSON.parse(dcmQuickOk(['--db', t.db, 'strategy-step', 'history', '-f', 'json']).stdout) as { state: string }[];
        dcmQuickOk(['--db', t.db, 'strategy', 'delete', '--yes']);
        dcmQuickOk(['--db', t.db, 'subcloud', 'update', 's1', '--sync', 'kube-rootca=out-of-sync']);
        return seen.map((h) => h.state);
      };
      const plain = k.states.split('\n').filter((s) => !marked.includes(s));
      expect(states([])).toEqual(plain);
      expect(states(['--cert-file', 'ca.pem'])).toEqual(k.states.split('\n').map((s) => s.replace(' (with --cert-file)', '')));
    } finally {
      t.cleanup();
    }
  });
});
