/**
 * Mutants: faults of dcm's own code that the simulator must catch, each kept as a patch beside it
 * (src/sim/mutants/*.patch, listed in index.json with what it breaks and its budget), never in the
 * product. A run applies each patch to a copy of the source, builds the files it changed into a copy
 * of the built tree, and runs the simulator from that copy on the mutant's seed, at most its budget
 * of schedules, stopping at the first that breaks an invariant. A mutant not caught within its
 * budget means the evidence the simulator gives is weaker than it says.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Mutant {
  name: string;
  /** What it breaks, as a person would say it. */
  what: string;
  /** The schedules that must catch it: drawn from `seed`, at most `budget` of them. */
  seed: number;
  budget: number;
  hosts?: number;
}

export interface MutantResult extends Mutant {
  caught: boolean;
  /** The schedule that caught it: its index and its seed, and the invariant it broke. */
  at: { index: number; seed: number; violation: string } | null;
  schedules: number;
  seconds: number;
  error?: string;
}

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** The project's root, from the built tree (dist/sim) or the source (src/sim). */
const ROOT = path.resolve(HERE, '..', '..');
const MUTANTS = path.join(ROOT, 'src', 'sim', 'mutants');

export function listMutants(): Mutant[] {
  return JSON.parse(fs.readFileSync(path.join(MUTANTS, 'index.json'), 'utf8')) as Mutant[];
}

/** The files a patch changes (`+++ b/src/…`). */
function changedFiles(patch: string): string[] {
  return [...patch.matchAll(/^\+\+\+ b\/(\S+)/gm)].map((m) => m[1]);
}

/** A copy of the built tree with `patch` applied to the sources it changes, rebuilt one file at a time. */
async function mutantTree(m: Mutant): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `dcm-mutant-${m.name}-`));
  fs.cpSync(path.join(ROOT, 'dist'), path.join(dir, 'dist'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  fs.writeFileSync(path.join(dir, 'package.json'), fs.readFileSync(path.join(ROOT, 'package.json')));
  const patchFile = path.join(MUTANTS, `${m.name}.patch`);
  const r = spawnSync('git', ['apply', '-p1', patchFile], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the patch does not apply: ${r.stderr.trim().split('\n')[0] ?? ''}`);
  // TypeScript is a development dependency: mutants are the developers' and CI's, never a user's.
  const ts = (await import('typescript')).default;
  for (const file of changedFiles(fs.readFileSync(patchFile, 'utf8'))) {
    if (!file.startsWith('src/') || !file.endsWith('.ts')) continue;
    const out = ts.transpileModule(fs.readFileSync(path.join(dir, file), 'utf8'), {
      // ESNext modules: the package is "type": "module" (NodeNext would read a lone file as CommonJS).
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, esModuleInterop: true },
      fileName: file,
    });
    fs.writeFileSync(path.join(dir, 'dist', file.slice('src/'.length).replace(/\.ts$/, '.js')), out.outputText);
  }
  return dir;
}

/** Run one mutant: caught when a schedule of its budget breaks an invariant. */
export async function runMutant(m: Mutant, jobs: number): Promise<MutantResult> {
  const started = Date.now();
  const base = { ...m, caught: false, at: null, schedules: 0, seconds: 0 };
  let dir: string | null = null;
  try {
    dir = await mutantTree(m);
    const args = ['--seed', String(m.seed), '--schedules', String(m.budget), '--first', '--no-shrink', '--jobs', String(jobs), ...(m.hosts ? ['--hosts', String(m.hosts)] : [])];
    const main = path.join(dir, 'dist', 'sim', 'main.js');
    const r = spawnSync(process.execPath, [main, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    const seconds = (Date.now() - started) / 1000;
    const first = /^schedule (\d+) \(seed (\d+)\): \d+ violation\(s\); first: ([^\n]+)$/m.exec(r.stderr);
    const ran = /^dcm sim: seed \d+, (\d+) schedule/m.exec(r.stdout);
    if (r.status === 2 || !ran) return { ...base, seconds, error: (r.stderr || r.stdout).trim().split('\n').pop() ?? `exit ${r.status}` };
    return { ...base, caught: first !== null, at: first ? { index: Number(first[1]), seed: Number(first[2]), violation: first[3] } : null, schedules: Number(ran[1]), seconds };
  } catch (err) {
    return { ...base, seconds: (Date.now() - started) / 1000, error: (err as Error).message };
  } finally {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function runMutants(o: { only?: string; jobs: number; out: (line: string) => void }): Promise<MutantResult[]> {
  const all = listMutants().filter((m) => !o.only || m.name === o.only);
  if (o.only && all.length === 0) throw new Error(`no mutant named ${o.only}`);
  const results: MutantResult[] = [];
  for (const m of all) {
    const r = await runMutant(m, o.jobs);
    o.out(`${m.name}: ${r.caught ? `caught by schedule ${r.at!.index} (seed ${r.at!.seed})` : r.error ? `error: ${r.error}` : `NOT caught in ${r.schedules} schedule(s)`}`);
    results.push(r);
  }
  return results;
}

/** The mutants' table: each one, what it breaks, the schedule that caught it and its budget. */
export function mutantLines(rs: MutantResult[]): string[] {
  const lines = [`dcm sim --mutants: ${rs.filter((r) => r.caught).length} of ${rs.length} caught`];
  lines.push('| mutant | what it breaks | caught by (schedule, seed) | invariant broken | budget (seed, schedules) | schedules run | s |');
  lines.push('|---|---|---|---|---|---|---|');
  for (const r of rs) {
    const by = r.at ? `${r.at.index}, ${r.at.seed}` : r.error ? `error: ${r.error}` : 'NOT CAUGHT';
    const broke = r.at ? r.at.violation.replace(/\|/g, '/').slice(0, 120) : '';
    lines.push(`| ${r.name} | ${r.what} | ${by} | ${broke} | ${r.seed}, ${r.budget}${r.hosts ? ` (${r.hosts} hosts)` : ''} | ${r.schedules} | ${r.seconds.toFixed(1)} |`);
  }
  return lines;
}
