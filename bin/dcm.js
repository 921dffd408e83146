#!/usr/bin/env node
// Thin launcher: the CLI lives in the compiled dist/ tree (built by `npm install` via `prepare`).
import { main } from '../dist/cli/main.js';
import { finalExitCode, guardProcessStreams } from '../dist/cli/streams.js';

// A closed or full stdout/stderr drops output and nothing else (SPEC §2.1 "Closed pipes").
const streams = guardProcessStreams();
main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
// A failed write reports itself after the command returned: decide at the very end.
process.on('exit', (code) => {
  process.exitCode = finalExitCode(code, streams.stdout);
});
