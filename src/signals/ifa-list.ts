// Known-bad device advertising IDs (placeholders, SDK defaults, documentation examples):
// a set of lowercase UUIDs read from a text file, one per line, `#` starts a comment.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ZERO_IFA = '00000000-0000-0000-0000-000000000000';
/** Errors listed in one thrown message before the rest are summarised. */
const MAX_REPORTED_ERRORS = 20;

export class IfaList {
  private constructor(private readonly ifas: ReadonlySet<string>) {}

  /**
   * Parses the list; every malformed line is reported as `file:line: why` in one Error.
   * The all-zero IFA is refused: it means limited ad tracking, and listing it would
   * mark every opted-out user as fraud.
   */
  static parse(text: string, fileName: string): IfaList {
    const ifas = new Set<string>();
    const errors: string[] = [];
    const lines = text.split('\n');
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n]!;
      const hash = line.indexOf('#');
      const entry = (hash >= 0 ? line.slice(0, hash) : line).trim().toLowerCase();
      if (entry === '') continue;
      const where = `${fileName}:${n + 1}`;
      if (!UUID.test(entry)) {
        errors.push(`${where}: "${entry.slice(0, 60)}" is not an IFA (a UUID of 8-4-4-4-12 hex digits)`);
      } else if (entry === ZERO_IFA) {
        errors.push(`${where}: the all-zero IFA means limited ad tracking, not fraud; remove it`);
      } else {
        ifas.add(entry);
      }
    }
    if (errors.length > 0) {
      const more = errors.length - MAX_REPORTED_ERRORS;
      const shown = errors.slice(0, MAX_REPORTED_ERRORS).join('\n');
      throw new Error(`invalid IFA list ${fileName}:\n${shown}${more > 0 ? `\n(and ${more} more)` : ''}`);
    }
    return new IfaList(ifas);
  }

  /** Case-insensitive; only a 36-character miss pays for lowercasing (iOS IDFAs are uppercase). */
  has(ifa: string): boolean {
    if (ifa.length !== 36) return false;
    return this.ifas.has(ifa) || this.ifas.has(ifa.toLowerCase());
  }

  get size(): number {
    return this.ifas.size;
  }
}
