#!/usr/bin/env node
/**
 * Baseline of figure 3: the floor for a Node CLI that lists the steps as JSON. Opens the file
 * read-only, selects the rows `dcm strategy-step list` shows (same join, same order) and prints
 * them as 2-space-indented JSON.
 *
 * usage: node bench/baseline/read-json.js FILE
 */
import Database from 'better-sqlite3';
import { STEP_QUERY } from '../lib/queries.js';

const db = new Database(process.argv[2], { readonly: true, fileMustExist: true });
const rows = db.prepare(STEP_QUERY).all();
db.close();
process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
