/**
 * Builds native/dcm-run (./dcm-run.c), the exec driver's run wrapper, at install (`npm ci`,
 * `npm install`: package.json's `install` script). It needs a C compiler, which better-sqlite3's
 * build from source needs too; `CC` names another (`ccache gcc`, say). Where none is found the
 * install goes on, with a one-line note: the launcher then starts each run under the sh wrapper
 * (src/drivers/exec/wrapper.ts), which writes the same files with the same meaning at the cost
 * of a second process a run (BENCHMARKS.md, issue 31).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, 'dcm-run');
const tmp = `${out}.${process.pid}`;
// CC may be a command with arguments (ccache gcc): the shell splits it.
const r = spawnSync('sh', ['-c', '${CC:-cc} -O2 -o "$1" "$2"', 'cc', tmp, path.join(here, 'dcm-run.c')], { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' });
if (r.status === 0) {
  // Renamed into place: a launcher starting a run now never sees half a file.
  fs.renameSync(tmp, out);
} else {
  fs.rmSync(tmp, { force: true });
  const why = (r.stderr || r.error?.message || '').trim().split('\n').pop();
  process.stderr.write(`dcm: native/dcm-run not built (${why || `exit ${r.status}`}); exec runs use the sh wrapper\n`);
}
