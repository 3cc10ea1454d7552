// Curated ASN lists (data/hosting-asns.txt, data/vpn-asns.txt): `AS<number> <category>`
// lines with a comment naming the org and the source.

const ASN_LINE = /^AS(\d{1,10})\s+([a-z][a-z0-9-]*)$/i;

/** A set of ASNs with a category each, parsed from `AS<number>  <category>  # <org> — source: <...>` lines. */
export class AsnList {
  private constructor(private readonly byAsn: ReadonlyMap<number, string>) {}

  static readonly empty = new AsnList(new Map());

  /** Throws an Error naming fileName and the line number for any line that is not an entry, comment or blank. */
  static parse(text: string, fileName: string): AsnList {
    const byAsn = new Map<number, string>();
    const firstLine = new Map<number, number>();
    const lines = text.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      const hash = (lines[i] as string).indexOf('#');
      const body = (hash < 0 ? (lines[i] as string) : (lines[i] as string).slice(0, hash)).trim();
      if (body === '') continue;
      const where = `${fileName}:${i + 1}`;
      const m = ASN_LINE.exec(body);
      if (!m) throw new Error(`${where}: expected "AS<number> <category>  # comment", got "${body}"`);
      const asn = Number(m[1]);
      if (asn < 1 || asn > 0xffffffff) throw new Error(`${where}: AS${m[1]} is not a valid 32-bit ASN`);
      const seen = firstLine.get(asn);
      if (seen !== undefined) throw new Error(`${where}: AS${asn} is already listed on line ${seen}`);
      firstLine.set(asn, i + 1);
      byAsn.set(asn, (m[2] as string).toLowerCase());
    }
    return new AsnList(byAsn);
  }

  has(asn: number): boolean {
    return this.byAsn.has(asn);
  }

  category(asn: number): string | undefined {
    return this.byAsn.get(asn);
  }

  get size(): number {
    return this.byAsn.size;
  }

  categories(): Set<string> {
    return new Set(this.byAsn.values());
  }
}

