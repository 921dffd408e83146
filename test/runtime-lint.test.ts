/**
 * The runtime owns time and processes (platform/runtime.ts): the apply service, the orchestrator
 * (its lock and its lease among it) and the store reach a clock, a timer, a process or a signal
 * only through the runtime they are given, so that the simulator (src/sim) can give each of its
 * processes its own, and no global is ever replaced. This test reads their sources and fails on any
 * other way in: the process's own clock (`Date.now()`, `new Date()`, `performance.`), a bare
 * timer, or a process or signal reached directly.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './helpers/cli.js';

/** The layers the runtime must be the one way in to. */
const SCOPE = ['src/orchestrator', 'src/store', 'src/commands/apply-service.ts'];

/** Files allowed a way around the runtime, each with its reason. */
const EXEMPT: Record<string, string> = {
  // Loaded only with DCM_TEST_HOOKS=1: a real crash (kill -9 of itself) and a real stop, at a commit a test names.
  'src/orchestrator/test-hooks.ts': "a test hook's own kill -9, SIGSTOP and held lock",
};

/** What only a runtime may give, and how a source would reach it otherwise. */
const FORBIDDEN: [string, RegExp][] = [
  ['the wall clock', /\bDate\.now\s*\(/],
  ['the wall clock', /\bnew Date\s*\(\s*\)/],
  ['a clock', /\bperformance\s*\./],
  ['a bare timer', /(?<![.\w])(setTimeout|setInterval|setImmediate)\s*\(/],
  ['a process', /\bprocess\.(kill|pid|ppid)\b/],
  ['a signal', /\bprocess\.(on|once|off)\s*\(\s*['"]SIG/],
  ['a process', /\bprocessAlive\s*\(/],
];

function sources(p: string): string[] {
  const abs = path.join(ROOT, p);
  if (fs.statSync(abs).isFile()) return [p];
  return fs.readdirSync(abs, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(path.join(p, e.name)) : e.name.endsWith('.ts') ? [path.join(p, e.name)] : []));
}

/** The source without comments (a comment may name Date.now), strings kept. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

function findings(): string[] {
  const out: string[] = [];
  for (const file of SCOPE.flatMap(sources)) {
    if (file in EXEMPT) continue;
    const lines = code(fs.readFileSync(path.join(ROOT, file), 'utf8')).split('\n');
    lines.forEach((line, i) => {
      for (const [what, re] of FORBIDDEN) if (re.test(line)) out.push(`${file}:${i + 1}: ${what} outside the runtime: ${line.trim()}`);
    });
  }
  return out;
}

describe('the runtime is the one way to time and processes', () => {
  test('no clock, timer, process or signal reached around it in the service, the orchestrator or the store', () => {
    expect(findings()).toEqual([]);
  });

  test('the scan sees what it looks for', () => {
    // A scope that moved or a pattern that no longer matches would pass by seeing nothing.
    expect(SCOPE.flatMap(sources).length).toBeGreaterThan(60);
    const probe = 'const t = Date.now(); setTimeout(f, 1); process.kill(1, 0); const p = performance.now(); new Date();';
    expect(FORBIDDEN.filter(([, re]) => re.test(probe)).length).toBeGreaterThanOrEqual(5);
    expect(Object.keys(EXEMPT).every((f) => fs.existsSync(path.join(ROOT, f)))).toBe(true);
  });
});
