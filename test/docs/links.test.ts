/**
 * Every link between the README, BENCHMARKS.md and docs/ leads somewhere: the file exists, and a
 * `#fragment` names a heading of it (as forges make a heading's anchor). A page moved or a heading
 * renamed without its links fails here.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { anchor } from '../../src/cli/docs/markdown.js';
import { ROOT } from '../helpers/cli.js';

/** Pages other issues are writing beside this one: a link to them may wait for them. */
const WRITTEN_ELSEWHERE = new Set(['docs/compatibility.md', 'docs/guide/rate-plan-metrics-traces.md']);

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(p) : e.name.endsWith('.md') ? [p] : [];
  });
}

/** The anchors of a page's headings, as GitHub numbers repeats (`x`, `x-1`), and its `<a id>`s. */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*```/.test(line)) fence = !fence;
    if (fence) continue;
    const h = /^#{1,6} (.*)$/.exec(line);
    if (h) {
      const base = anchor(h[1].replace(/`/g, '').trim());
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n ? `${base}-${n}` : base);
    }
    for (const m of line.matchAll(/<a id="([^"]+)"><\/a>/g)) out.add(m[1]);
  }
  return out;
}

/** Every relative link of a page outside code: `[text](target)`. */
function linksOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((t) => !/^[a-z]+:/.test(t));
}

const PAGES = [path.join(ROOT, 'README.md'), path.join(ROOT, 'BENCHMARKS.md'), ...markdownFiles(path.join(ROOT, 'docs'))];

describe('the documentation links', () => {
  test('every relative link names a file that exists, and a heading of it', () => {
    const broken: string[] = [];
    let fragments = 0;
    for (const page of PAGES) {
      for (const link of linksOf(page)) {
        if (link.includes('#')) fragments++;
        const [target, fragment] = link.split('#');
        const file = target ? path.resolve(path.dirname(page), target) : page;
        const rel = path.relative(ROOT, file);
        if (!fs.existsSync(file)) {
          if (!WRITTEN_ELSEWHERE.has(rel)) broken.push(`${path.relative(ROOT, page)}: ${link} (no such file)`);
          continue;
        }
        if (fragment && file.endsWith('.md') && !anchorsOf(file).has(fragment)) broken.push(`${path.relative(ROOT, page)}: ${link} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
    expect(fragments).toBeGreaterThan(100);
  });
});
