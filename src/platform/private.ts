/**
 * Modes of the files dcm writes that may hold a secret: the database (the sysadmin password is in
 * the strategy's extra args), its backups, the exec driver's run logs and their folders (a run
 * may print what it was given). Given at creation, so the umask can only take bits away: private
 * whatever the umask.
 */
export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;
