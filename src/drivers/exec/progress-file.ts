/**
 * A run's `$DCM_PROGRESS` file (beside its log: `<attempt>-<state>.progress`), read while the run
 * goes on: its last non-empty line is the run's word on how far it is, as dcmanager's VIM states
 * report `"<phase> phase is N% complete"`. Looked at once a second per run in flight, and only
 * read when its size or mtime moved (one `stat` otherwise), so 500 runs cost 500 stats a second;
 * a run that never writes it costs one failed `stat` a second and nothing else.
 */
import fs from 'node:fs';
import { lastLine } from './files.js';

/** How often a run's progress file is looked at. */
export const PROGRESS_POLL_MS = 1000;

/** A line is cut to this (details of an exec run stay short, as its failure reasons do). */
const PROGRESS_LIMIT = 200;

/**
 * Watch `file` until the returned function is called: `onLine` gets its last non-empty line each
 * time that line changed. The timer is unref'd: a watch never keeps dcm alive by itself.
 */
export function watchProgress(file: string, onLine: (text: string) => void): () => void {
  let seen = '';
  let said = '';
  const look = () => {
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (!st) return;
    const mark = `${st.size}:${st.mtimeMs}:${st.ino}`;
    if (mark === seen) return;
    seen = mark;
    let line = lastLine(file);
    if (line.length > PROGRESS_LIMIT) line = `${line.slice(0, PROGRESS_LIMIT - 1)}…`;
    if (!line || line === said) return;
    said = line;
    onLine(line);
  };
  const timer = setInterval(() => {
    try {
      look();
    } catch {
      // Unreadable for a moment (replaced as it is read): looked at again next time.
    }
  }, PROGRESS_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
