/**
 * The page cache of a connection that reads a window at a time (the apply's, the sim's sites):
 * SQLite's own default of 2 MB rather than better-sqlite3's 16 MB. Such a connection never reads a
 * page again once its window has moved on, so a cache that fills with a 100,000-subcloud file (and
 * with the quick check's pass over every page) is only memory: this took the peak RSS of a
 * 100,000-subcloud apply from 152-158 to 127-129 MiB at the same speed, and figure 1's from 123
 * to 114 MiB (0.99 of the time).
 */
export const WINDOW_PAGE_CACHE = 'cache_size = -2000';

/**
 * Give a connection that reads a window at a time that cache. Here, not in store/open.ts: only
 * apply and the sim's sites need it, and every other command would load this module for nothing.
 * A file's only: a server keeps its own cache.
 */
export async function useWindowPageCache(db: { pragma(text: string): unknown }): Promise<void> {
  await db.pragma(WINDOW_PAGE_CACHE);
}
