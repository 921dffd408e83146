/**
 * Diagnostic preload (node --import): records every module the process loads, ES modules through
 * a load hook and CommonJS ones from the require cache, as JSON lines in $BENCH_MODULES_OUT.
 */
import fs from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';

const out = process.env.BENCH_MODULES_OUT;
if (out) {
  fs.writeFileSync(out, '');
  register('./count-modules-hooks.js', { parentURL: import.meta.url, data: { out } });
  const require = createRequire(import.meta.url);
  process.on('exit', () => {
    const lines = Object.keys(require.cache).map((f) => JSON.stringify(pathToFileURL(f).href));
    if (lines.length) fs.appendFileSync(out, lines.join('\n') + '\n');
  });
}
