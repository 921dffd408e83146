/** Generated fleets and prepared dcm files, shared by the figures. */
import fs from 'node:fs';
import path from 'node:path';
import { setup } from './proc.js';

export const CSV_HEADER = 'name,description,location,management,availability,deploy_status,software_version,sync';

/** A CSV of `n` managed, online, out-of-sync subclouds (no quoting needed: no commas in values). */
export function writeFleetCsv(file, n) {
  const lines = [CSV_HEADER];
  for (let i = 1; i <= n; i++) {
    lines.push(`subcloud${i},bench site ${i},rack ${i % 100},managed,online,complete,24.09,out-of-sync`);
  }
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

/** Copy a closed SQLite file (and its WAL if one was left), replacing whatever was at `to`. */
export function copyDb(from, to) {
  // The sim driver's sites live beside the database (`.sites`): a copy starts with none, as the
  // prepared file had none, or the last run's sites would answer this run's operations.
  for (const suffix of ['', '-wal', '-shm', '.sites', '.sites-wal', '.sites-shm']) fs.rmSync(to + suffix, { force: true });
  fs.copyFileSync(from, to);
  if (fs.existsSync(`${from}-wal`)) fs.copyFileSync(`${from}-wal`, `${to}-wal`);
}

export function removeDb(file) {
  for (const suffix of ['', '-wal', '-shm', '.sites', '.sites-wal', '.sites-shm']) fs.rmSync(file + suffix, { force: true });
}

/** Runs the CLI as a set-up step (not measured) and returns its stdout. */
export function dcmSetup(ctx, args, extraEnv = {}) {
  return setup(process.execPath, [ctx.dcm, ...args], { env: { ...process.env, ...extraEnv } });
}

/**
 * An empty dcm file: the schema and the Default group, made by dcm itself (a group added and
 * deleted again: read commands never create the file).
 */
export function emptyDcmDb(ctx, file) {
  removeDb(file);
  dcmSetup(ctx, ['--db', file, 'subcloud-group', 'add', '--name', 'bench-schema']);
  dcmSetup(ctx, ['--db', file, 'subcloud-group', 'delete', 'bench-schema']);
  return file;
}

/** A file with `n` imported subclouds and a patch strategy created with the given options. */
export function preparedStrategy(ctx, dir, name, n, createArgs) {
  const csv = writeFleetCsv(path.join(dir, `${name}.csv`), n);
  const file = path.join(dir, `${name}.db`);
  removeDb(file);
  dcmSetup(ctx, ['--db', file, 'subcloud', 'import', csv]);
  dcmSetup(ctx, ['--db', file, 'strategy', 'create', '--type', 'patch', ...createArgs]);
  fs.rmSync(csv);
  return file;
}
