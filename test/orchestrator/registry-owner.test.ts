/**
 * SPEC §1's single owner, read from the source: the map of running workers is created and written
 * in src/orchestrator/registry.ts alone; every other module reaches it through the Registry's
 * methods (add, settle), and no driver or state operation imports it.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

const files = sources(path.join(ROOT, 'src')).map((abs) => ({ file: path.relative(ROOT, abs).split(path.sep).join('/'), text: fs.readFileSync(abs, 'utf8') }));
const REGISTRY = 'src/orchestrator/registry.ts';

describe('the registry of running workers', () => {
  test('its map is made in registry.ts only, and written there only', () => {
    const made = files.filter((f) => /new Map<number, Worker>\(\)/.test(f.text)).map((f) => f.file);
    expect(made).toEqual([REGISTRY]);
    const own = files.find((f) => f.file === REGISTRY)!.text;
    // The map is private to the class: nothing outside can reach `.map`.
    expect(own).toMatch(/private readonly map = new Map<number, Worker>\(\)/);
    const writes = [...own.matchAll(/this\.map\.(set|delete|clear)\(/g)].map((m) => m[1]);
    expect(writes.sort()).toEqual(['delete', 'set']);
  });

  test('only the orchestrator uses the Registry, and no driver sees it', () => {
    const users = files.filter((f) => f.file !== REGISTRY && /from '\.\/registry\.js'/.test(f.text)).map((f) => f.file);
    expect(users.every((f) => f.startsWith('src/orchestrator/'))).toBe(true);
    expect(users.length).toBeGreaterThan(0);
    const registryImports = files.filter((f) => /registry\.js'/.test(f.text) && !f.file.startsWith('src/orchestrator/'));
    expect(registryImports.map((f) => f.file)).toEqual([]);
    // A registry entry is added in two places only: a start and an adopted run getting its slot.
    const adds = files.flatMap((f) => [...f.text.matchAll(/this\.registry\.add\(/g)].map(() => f.file));
    expect(adds).toEqual(['src/orchestrator/launch.ts', 'src/orchestrator/launch.ts']);
  });

  test('no file in src is over 450 lines, and orchestrator.ts only wires the parts', () => {
    const long = files.filter((f) => f.text.split('\n').length > 451).map((f) => `${f.file}: ${f.text.split('\n').length}`);
    expect(long).toEqual([]);
    expect(files.find((f) => f.file === 'src/orchestrator/orchestrator.ts')!.text.split('\n').length).toBeLessThanOrEqual(320);
  });
});
