/** Which file: `--db PATH`, else `$DCM_DB`, else `./dcm.db` (SPEC §2). */
export function resolveDbPath(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return option || env.DCM_DB || './dcm.db';
}
