/** Module hooks of count-modules.js (they run on the loader thread). */
import fs from 'node:fs';

let out = null;

export function initialize(data) {
  out = data.out;
}

export async function load(url, context, nextLoad) {
  if (out && url.startsWith('file:')) fs.appendFileSync(out, JSON.stringify(url) + '\n');
  return nextLoad(url, context);
}
