// Org-name rules (data/hosting-org-patterns.txt): an ASN whose org name matches one is a
// hosting provider unless an exclusion ("!regex") matches too.

export interface OrgPatterns {
  /** An org name matching any of these is a hosting provider ... */
  include: RegExp[];
  /** ... unless it also matches one of these (lines starting with "!"). */
  exclude: RegExp[];
}

/** One case-insensitive regex per line; "!regex" excludes; "#" comments. Throws naming file and line. */
export function parseOrgPatterns(text: string, fileName: string): OrgPatterns {
  const out: OrgPatterns = { include: [], exclude: [] };
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '' || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    const source = negate ? line.slice(1).trim() : line;
    try {
      (negate ? out.exclude : out.include).push(new RegExp(source, 'i'));
    } catch (e) {
      throw new Error(`${fileName}:${i + 1}: invalid regular expression: ${(e as Error).message}`);
    }
  }
  return out;
}

