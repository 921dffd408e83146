#!/usr/bin/env node
// Thin launcher: the CLI lives in the compiled dist/ tree (built by `npm install` via `prepare`).
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
