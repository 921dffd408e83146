/**
 * Drawing a `--watch` command's frames on stdout: on a terminal each frame replaces the last
 * (log-update, as the live view), elsewhere each frame that differs from the last is printed in
 * full, one after the other, for a log or a pipe.
 */
import { createLogUpdate } from 'log-update';
import { guardStream } from './streams.js';
import type { Printable } from './output/views.js';

/** `emit` answers false once the reader went away (`| head`): the watch then stops. */
export type WatchFn = (emit: (r: Printable) => Promise<boolean>) => Promise<number>;

export async function runWatch(watch: WatchFn, out: NodeJS.WriteStream, render: (r: Printable) => Promise<string>): Promise<number> {
  const tty = out.isTTY === true;
  const log = tty ? createLogUpdate(out) : null;
  const guard = guardStream(out);
  let last = '';
  const code = await watch(async (r) => {
    const text = await render(r);
    if (text !== last) {
      last = text;
      if (log) log(text.replace(/\n$/, ''));
      else out.write(text);
    }
    return !guard.closed;
  });
  if (log) {
    // log-update draws a frame taller than the terminal without its top lines, and patches each
    // frame over the last: the frame left on screen at the end is written again, whole, in place
    // of the view (as the live view of apply does), so both borders of its table stay.
    log.clear();
    log.done();
    if (last && !guard.closed) out.write(last);
  }
  return code;
}
