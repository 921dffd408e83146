/**
 * Placeholders of an exec command (SPEC §7.2): `{cloud}`, `{state}`, … replaced by the run's
 * values. `{{` and `}}` stand for literal braces. Only lowercase names are placeholders, so a
 * shell's `${HOME}` passes through untouched.
 */

/** Type options as stored in extra args, by placeholder name. */
export const TYPE_OPTION_KEYS: Record<string, string> = {
  patch_id: 'patch_id',
  release_id: 'release_id',
  to_version: 'to_version',
  release: 'prestage_software_version',
  subject: 'subject',
  expiry_date: 'expiry_date',
  cert_file: 'cert_file',
};

/** The subcloud's fields a command may name. */
export const SUBCLOUD_FIELDS = [
  'group',
  'software_version',
  'location',
  'description',
  'management',
  'availability',
  'deploy_status',
] as const;

export const PLACEHOLDERS: readonly string[] = [
  'cloud',
  'state',
  'type',
  'attempt',
  'stage',
  'db',
  ...Object.keys(TYPE_OPTION_KEYS),
  ...SUBCLOUD_FIELDS,
];

const PATTERN = /\{\{|\}\}|\{([a-z_][a-z0-9_]*)\}/g;

/** The placeholder names used in `text` that are not known; empty when all are. */
export function unknownPlaceholders(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PATTERN)) {
    if (m[1] !== undefined && !PLACEHOLDERS.includes(m[1])) out.push(m[1]);
  }
  return out;
}

/** Single-quote a value for /bin/sh: nothing inside is expanded. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

export function render(text: string, values: Record<string, string>, quote: boolean): string {
  return text.replace(PATTERN, (all, name: string | undefined) => {
    if (name === undefined) return all[0];
    const v = values[name] ?? '';
    return quote ? shellQuote(v) : v;
  });
}
