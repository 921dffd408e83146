/**
 * Diagnostic runs (one each, not timed): a CPU profile summarised by where the time went, the
 * commits per connection, the modules a command loads. They feed the "limited by" column.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { measure } from './proc.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const COUNT_COMMITS = pathToFileURL(path.join(here, '..', 'diag', 'count-commits.js')).href;
const COUNT_MODULES = pathToFileURL(path.join(here, '..', 'diag', 'count-modules.js')).href;

function moduleOf(url, root) {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 13).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.startsWith(root)) return url.slice(root.length).replace(/^\/?(dist\/)?/, '').replace(/\.js$/, '');
  return url.split('/').pop();
}

/**
 * Where a sample's time goes: a function of dcm ("listSubclouds (store/subclouds)"), a dependency
 * as a whole ("csv-parse"), GC, or Node's internals (loading modules, fs, timers). V8 counts the time
 * of a native call (SQLite through better-sqlite3, JSON.stringify) in the JavaScript function
 * that made it.
 */
function bucketsOf(frame, root) {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(garbage collector)') return ['GC', 'GC'];
    if (functionName.startsWith('(')) return [functionName, functionName];
    return ['Node internals', 'Node internals'];
  }
  if (url.startsWith('node:')) return ['Node internals', 'Node internals'];
  const mod = moduleOf(url, root);
  // A dependency counts as one bucket (its time is spread over many small functions).
  if (url.includes('node_modules/')) return [mod, mod];
  return [`${functionName || '(anonymous)'} (${mod})`, mod];
}

function ranked(map, total) {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([name, ms]) => ({ name, ms: Number(ms.toFixed(1)), share: Number((ms / total).toFixed(3)) }));
}

/** Self time by function and by module, in ms, idle time left out. */
export function summariseProfile(profile, root) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const functions = new Map();
  const modules = new Map();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    const [fn, mod] = bucketsOf(node.callFrame, root);
    if (fn === '(idle)' || fn === '(root)') continue;
    total += dt;
    functions.set(fn, (functions.get(fn) ?? 0) + dt);
    modules.set(mod, (modules.get(mod) ?? 0) + dt);
  }
  return { busyMs: Number(total.toFixed(1)), top: ranked(functions, total), modules: ranked(modules, total) };
}

/** "listSubclouds (store/subclouds) 42%, GC 26%, insertSteps (store/steps) 11%" */
export function topLine(summary, n = 3) {
  return summary.top
    .slice(0, n)
    .map((b) => `${b.name} ${Math.round(b.share * 100)}%`)
    .join(', ');
}

/** Run `node --cpu-prof script args` once and summarise the profile. */
export async function cpuProfile(ctx, args, options = {}) {
  const dir = fs.mkdtempSync(path.join(ctx.tmp, 'prof-'));
  try {
    await measure(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dir, ...args], { ...options, tmp: ctx.tmp });
    const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    const profile = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    return summariseProfile(profile, pathToFileURL(ctx.root).href);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Commits and write statements per SQLite connection of one run. */
export async function countCommits(ctx, args, options = {}) {
  const out = path.join(ctx.tmp, 'counts.json');
  await measure(process.execPath, ['--import', COUNT_COMMITS, ...args], {
    ...options,
    tmp: ctx.tmp,
    env: { ...(options.env ?? {}), BENCH_COUNTS_OUT: out },
  });
  const counts = JSON.parse(fs.readFileSync(out, 'utf8'));
  fs.rmSync(out);
  return counts;
}

/** The modules one run loads: how many, and which packages. */
export async function countModules(ctx, args, options = {}) {
  const out = path.join(ctx.tmp, 'modules.txt');
  await measure(process.execPath, ['--import', COUNT_MODULES, ...args], {
    ...options,
    tmp: ctx.tmp,
    env: { ...(options.env ?? {}), BENCH_MODULES_OUT: out },
  });
  const urls = new Set(
    fs
      .readFileSync(out, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((u) => !u.includes('/bench/diag/') && !u.endsWith('.json')),
  );
  fs.rmSync(out);
  const packages = new Map();
  let own = 0;
  for (const u of urls) {
    const nm = u.lastIndexOf('node_modules/');
    if (nm >= 0) {
      const parts = u.slice(nm + 13).split('/');
      const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
      packages.set(name, (packages.get(name) ?? 0) + 1);
    } else own++;
  }
  return { total: urls.size, own, packages: Object.fromEntries([...packages].sort((a, b) => b[1] - a[1])) };
}
