/**
 * Global options work before or after the command (`dcm -f json strategy show` ≡
 * `dcm strategy show -f json`): they are taken out of argv before commander sees it.
 */
import { UsageError } from '../domain/errors.js';
import { FORMATS, type Format } from './output/options.js';

export interface GlobalOptions {
  db?: string;
  format: Format;
  columns: string[];
  noindent: boolean;
  noColor: boolean;
  quiet: boolean;
}

const WITH_VALUE: Record<string, 'db' | 'format' | 'column'> = {
  '--db': 'db',
  '-f': 'format',
  '--format': 'format',
  '-c': 'column',
  '--column': 'column',
};

export function extractGlobals(argv: readonly string[]): { globals: GlobalOptions; rest: string[] } {
  const g: GlobalOptions = { format: 'table', columns: [], noindent: false, noColor: false, quiet: false };
  const rest: string[] = [];
  const set = (key: 'db' | 'format' | 'column', value: string | undefined, flag: string) => {
    if (value === undefined) throw new UsageError(`option '${flag}' argument missing`);
    if (key === 'db') g.db = value;
    else if (key === 'column') g.columns.push(value);
    else {
      if (!(FORMATS as readonly string[]).includes(value)) {
        throw new UsageError(`option '${flag}' argument '${value}' is invalid (choose from ${FORMATS.join(', ')})`);
      }
      g.format = value as Format;
    }
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const flag = eq > 0 ? a.slice(0, eq) : a;
    if (WITH_VALUE[flag]) {
      set(WITH_VALUE[flag], eq > 0 ? a.slice(eq + 1) : argv[++i], flag);
    } else if (/^-[fc]./.test(a)) {
      set(WITH_VALUE[a.slice(0, 2)], a.slice(2), a.slice(0, 2));
    } else if (a === '--noindent') g.noindent = true;
    else if (a === '--no-color') g.noColor = true;
    else if (a === '-q' || a === '--quiet') g.quiet = true;
    else rest.push(a);
  }
  return { globals: g, rest };
}
