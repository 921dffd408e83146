/**
 * The CommonJS packages dcm uses (commander, better-sqlite3), loaded with `require`. An ES `import`
 * of a CommonJS module runs Node's cjs-module-lexer over its source to find its named exports
 * (and commander's ESM entry is a wrapper that adds one more module): about 25 ms of every
 * command's start-up on the bench machine, more than the rest of dcm's own modules. `require`
 * gives the same module objects without it.
 */
import { createRequire } from 'node:module';

export const requireCjs = createRequire(import.meta.url);
