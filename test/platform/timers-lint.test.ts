/**
 * Every delay dcm sets that a user can make long goes through src/platform/timers.ts, which
 * splits delays past Node's 2^31-1 ms limit (a longer bare setTimeout fires after 1 ms). This
 * test reads src/ and fails on a bare setTimeout/setInterval whose delay is not on the list of
 * short, fixed delays below: a new timer either uses the helper or is added here with its reason.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';

/** `file: delay expression` → why a bare timer is fine there. */
const ALLOWED: Record<string, string> = {
  'src/orchestrator/test-hooks.ts: workerData.ms': "a test hook's hold of the write lock, only with DCM_TEST_HOOKS=1",
  'src/commands/live-runs.ts: 250': "--wait's fixed 250 ms look at the live runs",
  'src/drivers/sim/sites.ts: 100': "a fixed 100 ms retry of the sim's busy flush",
  'src/drivers/sim/sites.ts: GATHER_MS': "the sim's sites on a server: a fixed 2 ms gathering of a flush",
  'src/platform/pg-client.ts: ANSWER_MS': "a fixed 60 s bound on a server's answer",
  'src/platform/pg-connection.ts: RECONNECT_EVERY_MS': "a fixed 200 ms pause between tries to connect again",
  'src/drivers/exec/progress-file.ts: PROGRESS_POLL_MS': "a fixed 1 s look at a run's progress file",
  'src/drivers/exec/wake-check.ts: tickMs': "the launcher's look at its clocks: at most every 500 ms, a quarter of the lease when shorter",
  'src/drivers/exec/index.ts: WOKEN_GRACE_MS': "a fixed 2 s wait, by a timeout fired late (dcm was stopped), for the end of a run woken with it",
};

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

/** The source without comments (a comment may name setTimeout), string contents kept. */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** The last top-level argument of the call whose `(` is at `open`. */
function lastArgument(text: string, open: number): string {
  let depth = 0;
  let start = open + 1;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) return text.slice(start, i).trim();
    } else if (c === ',' && depth === 1) start = i + 1;
  }
  throw new Error('unbalanced call');
}

function bareTimers(): { where: string; file: string; delay: string }[] {
  const out: { where: string; file: string; delay: string }[] = [];
  for (const abs of sources(path.join(ROOT, 'src'))) {
    const file = path.relative(ROOT, abs).split(path.sep).join('/');
    if (file === 'src/platform/timers.ts') continue;
    // The simulator's delays are on its virtual clock (src/sim/clock.ts), never a user's.
    if (file.startsWith('src/sim/')) continue;
    const text = stripComments(fs.readFileSync(abs, 'utf8'));
    for (const m of text.matchAll(/\b(setTimeout|setInterval)\s*\(/g)) {
      const delay = lastArgument(text, m.index! + m[0].length - 1);
      out.push({ where: `${file}: ${delay}`, file, delay });
    }
  }
  return out;
}

describe('timers', () => {
  test('no bare setTimeout/setInterval with a delay a user can give', () => {
    const found = bareTimers();
    expect(found.length).toBeGreaterThan(0); // the scan sees the allowed ones
    const unexpected = found.filter((t) => !(t.where in ALLOWED)).map((t) => t.where);
    expect(unexpected).toEqual([]);
  });

  test('each allowed delay is still there and is a fixed number', () => {
    const found = new Map(bareTimers().map((t) => [t.where, t]));
    for (const where of Object.keys(ALLOWED)) {
      const t = found.get(where);
      expect(t).toBeDefined();
      if (/^[A-Z_]+$/.test(t!.delay)) {
        // A constant may be imported: it is defined where it is exported.
        const own = fs.readFileSync(path.join(ROOT, t!.file), 'utf8');
        const from = new RegExp(`import \\{[^}]*\\b${t!.delay}\\b[^}]*\\} from '\\./([\\w-]+)\\.js'`).exec(own);
        const text = from ? fs.readFileSync(path.join(ROOT, path.dirname(t!.file), `${from[1]}.ts`), 'utf8') : own;
        expect(text).toMatch(new RegExp(`const ${t!.delay} = [\\d_]+;`));
      }
    }
  });
});
