/**
 * A fresh clone stays clean: `npm install` (the README's first command) and `npm ci` write
 * package-lock.json's root entry from package.json, so the committed lock must already say what
 * they would write, or a newcomer's first command leaves a modified tree. npm marks a package that
 * has an install script (`hasInstallScript`), and copies its name, version, license, bin and
 * dependencies. (Checked by hand as well: `npm install` and `npm ci` on a clean clone, with and
 * without node_modules, left `git status` empty.)
 */
import { expect, test } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './helpers/cli.js';

const read = (file: string) => JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as Record<string, unknown>;

test("the lock file's root entry is what npm install would write from package.json", () => {
  const pkg = read('package.json') as { name: string; version: string; license: string; bin: unknown; scripts: Record<string, string>; dependencies: unknown; devDependencies: unknown; engines: unknown };
  const root = (read('package-lock.json') as { packages: Record<string, Record<string, unknown>> }).packages[''];
  const installScript = ['preinstall', 'install', 'postinstall'].some((s) => s in pkg.scripts);
  expect(root.hasInstallScript ?? false).toBe(installScript);
  expect(root).toMatchObject({ name: pkg.name, version: pkg.version, license: pkg.license, bin: pkg.bin, engines: pkg.engines });
  expect(root.dependencies).toEqual(pkg.dependencies);
  expect(root.devDependencies).toEqual(pkg.devDependencies);
});
