/**
 * The layers point one way (DESIGN.md "The shape"): every import of every `src/**\/*.ts`, static,
 * re-exported or dynamic (`import('…')`, types included), goes to its own layer or to one the
 * table below allows. The table is the one place the directions are written.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from './helpers/cli.js';

const SRC = path.join(ROOT, 'src');

/**
 * Which layers each layer may import, besides its own. cli → commands → orchestrator → drivers,
 * store → platform → domain; the drivers and the store never see each other (a driver acts on a
 * subcloud, the store persists; the orchestrator joins them); nothing but cli imports cli. sim (the
 * simulator, `npm run sim`) stands beside cli: it runs the commands and the orchestrator as an
 * apply does, and nothing imports it.
 */
const MAY_IMPORT = {
  cli: ['commands', 'orchestrator', 'drivers', 'store', 'platform', 'domain'],
  sim: ['commands', 'orchestrator', 'drivers', 'store', 'platform', 'domain'],
  commands: ['orchestrator', 'drivers', 'store', 'platform', 'domain'],
  orchestrator: ['drivers', 'store', 'platform', 'domain'],
  drivers: ['platform', 'domain'],
  store: ['platform', 'domain'],
  platform: ['domain'],
  domain: [],
} as const;
type Layer = keyof typeof MAY_IMPORT;

/** Files allowed an import against the directions, while a move is under way (none now). */
const TEMPORARY_EXCEPTIONS: Record<string, readonly Layer[]> = {};

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

const rel = (file: string) => path.relative(ROOT, file).split(path.sep).join('/');
const layerOf = (file: string): string => path.relative(SRC, file).split(path.sep)[0];

/** The src files a file imports (package imports and node: modules are not layers). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((f) => f.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => path.resolve(path.dirname(file), name));
}

/** Every import that points where the table does not allow, as `file -> target`. */
function wrongWay(files: string[]): string[] {
  const wrong: string[] = [];
  for (const file of files) {
    const from = layerOf(file);
    const allowed: readonly string[] = [from, ...(MAY_IMPORT[from as Layer] ?? []), ...(TEMPORARY_EXCEPTIONS[rel(file)] ?? [])];
    for (const target of importsOf(file)) {
      if (!allowed.includes(layerOf(target))) wrong.push(`${rel(file)} -> ${rel(target).replace(/\.js$/, '.ts')}`);
    }
  }
  return wrong;
}

const FILES = sourceFiles(SRC);

describe('import directions', () => {
  test('every file is in a layer the table knows', () => {
    expect(FILES.length).toBeGreaterThan(50);
    expect(FILES.map(rel).filter((f) => !(layerOf(path.join(ROOT, f)) in MAY_IMPORT))).toEqual([]);
  });

  test('no import points up a layer, or sideways between the drivers and the store', () => {
    expect(wrongWay(FILES)).toEqual([]);
  });

  test('the imports are all found: static, re-exported, dynamic and type-only', () => {
    const found = importsOf(path.join(SRC, 'drivers', 'index.ts')).map(rel);
    expect(found).toEqual(expect.arrayContaining(['src/domain/errors.js', 'src/drivers/sim/index.js']));
    const types = importsOf(path.join(SRC, 'commands', 'results.ts')).map(rel);
    expect(types).toEqual(expect.arrayContaining(['src/commands/plain-results.js', 'src/store/steps.js']));
  });

  test('each temporary exception names a file that still exists (remove the entry with the move)', () => {
    for (const file of Object.keys(TEMPORARY_EXCEPTIONS)) expect(fs.existsSync(path.join(ROOT, file))).toBe(true);
    // Apply and abort are commands using the orchestrator as a service (issue 16).
    expect(fs.existsSync(path.join(SRC, 'orchestrator', 'commands.ts'))).toBe(false);
  });
});

describe('the store speaks for its backends', () => {
  // The orchestrator and the commands say what they mean (setBusyWait, dataVersion, quickCheck…),
  // and the store says it as SQLite or as PostgreSQL does: a pragma is SQLite's word. The test
  // seams (test-hooks.ts, loaded only when the environment names one) count the store's calls.
  test('no file of the orchestrator or the commands calls a pragma', () => {
    const calls = FILES.filter((f) => ['orchestrator', 'commands'].includes(layerOf(f)) && !f.endsWith(`${path.sep}test-hooks.ts`)).flatMap((f) =>
      fs
        .readFileSync(f, 'utf8')
        .split('\n')
        .map((line, i) => [`${rel(f)}:${i + 1}`, line] as const)
        .filter(([, line]) => /\.pragma\(/.test(line) && !/^\s*(\/\/|\*)/.test(line))
        .map(([at]) => at),
    );
    expect(calls).toEqual([]);
  });
});
