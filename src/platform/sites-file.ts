/**
 * Where the sim driver keeps its simulated sites: a file of their own beside the database,
 * `<database>.sites` (with its own `-wal` and `-shm`). One rule for the two that need the name: the
 * sim driver, which alone opens the file, and the store's migration 7 → 8, which moved the sites
 * of older files out of the database into it. The name is built from the database's real path
 * (symlinks resolved), so that a database reached through a link and by its own name has one
 * sites file.
 */
export function sitesFileOf(realDbPath: string): string {
  return `${realDbPath}.sites`;
}
