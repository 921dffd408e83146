/** Text into the report's HTML: every value escaped, times and spans as the page writes them. */
import { formatSpan } from '../../domain/estimate.js';
import { formatTimestamp } from '../../domain/time.js';

/** Every value that goes on the page goes through this: names, details and options are anyone's text. */
export function esc(text: unknown): string {
  return String(text ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** To the second: the page is read by a person; `strategy-step history` has the microseconds. */
export const fmtTime = (us: number | null) => (us === null ? '—' : formatTimestamp(us).slice(0, 19));
export const fmtMs = (ms: number) => (ms === 0 ? '0s' : formatSpan(ms));
