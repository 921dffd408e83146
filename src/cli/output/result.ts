/** The plain-table result shape lives with the commands that return it (src/commands/table.ts). */
export * from '../../commands/table.js';
