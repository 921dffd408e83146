/**
 * Drawing a `--watch` command's frames on stdout: on a terminal each frame replaces the last
 * (log-update, as the live view), elsewhere each frame that differs from the last is printed in
 * full, one after the other, for a log or a pipe.
 */
import { createLogUpdate } from 'log-update';
import type { Printable } from './output/views.js';

export type WatchFn = (emit: (r: Printable) => Promise<void>) => Promise<number>;

export async function runWatch(watch: WatchFn, out: NodeJS.WriteStream, render: (r: Printable) => Promise<string>): Promise<number> {
  const tty = out.isTTY === true;
  const log = tty ? createLogUpdate(out) : null;
  let last = '';
  const code = await watch(async (r) => {
    const text = await render(r);
    if (text === last) return;
    last = text;
    if (log) log(text.replace(/\n$/, ''));
    else out.write(text);
  });
  log?.done();
  return code;
}
