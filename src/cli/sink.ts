/**
 * Streamed output (`strategy-step logs`): written to stdout as it is read, with backpressure, and
 * stopped quietly when the reader goes away (`| head`): the stream's guard (streams.ts) already
 * knows when that happens, by an error or by a close without one.
 */
import type { LogSink } from '../commands/logs.js';
import { guardStream } from './streams.js';

export function stdoutSink(out: NodeJS.WriteStream = process.stdout, err: NodeJS.WritableStream = process.stderr): LogSink {
  const guard = guardStream(out);
  return {
    write(chunk) {
      if (guard.closed) return Promise.resolve(false);
      if (out.write(chunk)) return Promise.resolve(!guard.closed);
      // Full: wait for room, or for the reader to go (then 'drain' never comes).
      return new Promise((resolve) => {
        const done = () => {
          out.off('drain', done);
          out.off('close', done);
          out.off('error', done);
          resolve(!guard.closed);
        };
        out.once('drain', done);
        out.once('close', done);
        out.once('error', done);
      });
    },
    note(text) {
      err.write(`dcm: ${text}\n`);
    },
  };
}
