/** The plain-table result shape lives with the commands that return it (src/commands/plain-results.ts). */
export * from '../../commands/plain-results.js';
