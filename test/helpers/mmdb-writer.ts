// A minimal MMDB writer (IPv4 or IPv6 tree; 24-, 28- or 32-bit records) so the MaxMind-
// shaped record paths (country.iso_code, ASN db, Anonymous-IP flags) and the tree walk are
// exercised with real Reader parsing (test/signals/ip.test.ts, mmdb-tree.test.ts).
import { parseIp } from '../../src/signals/ip-address.ts';

export type MmdbValue = string | number | boolean | MmdbValue[] | { [k: string]: MmdbValue };

function mmdbValue(v: MmdbValue): Buffer {
  const ctrl = (type: number, size: number): Buffer => {
    if (size >= 29 + 256) throw new Error('test writer: sizes up to 284 only');
    const sizeBytes = size < 29 ? [size] : [29, size - 29];
    return Buffer.from(type <= 7 ? [(type << 5) | sizeBytes[0]!, ...sizeBytes.slice(1)] : [sizeBytes[0]!, type - 7, ...sizeBytes.slice(1)]);
  };
  if (typeof v === 'string') {
    const b = Buffer.from(v, 'utf8');
    return Buffer.concat([ctrl(2, b.length), b]);
  }
  if (typeof v === 'number') {
    const bytes: number[] = [];
    for (let x = v; x > 0; x = Math.floor(x / 256)) bytes.unshift(x % 256);
    return Buffer.concat([ctrl(6, bytes.length), Buffer.from(bytes)]);
  }
  if (typeof v === 'boolean') return ctrl(14, v ? 1 : 0);
  if (Array.isArray(v)) return Buffer.concat([ctrl(11, v.length), ...v.map(mmdbValue)]);
  const entries = Object.entries(v);
  return Buffer.concat([ctrl(7, entries.length), ...entries.flatMap(([k, x]) => [mmdbValue(k), mmdbValue(x)])]);
}

/** Bits of an address, most significant first (IPv4 inside an IPv6 tree as ::a.b.c.d). */
function addressBits(addr: string, ipVersion: 4 | 6): number[] {
  const p = parseIp(addr);
  if (!p) throw new Error(`bad address ${addr}`);
  const words = p.v === 4 ? (ipVersion === 4 ? [p.n] : [0, 0, 0, p.n]) : [...p.w];
  return words.flatMap((w) => Array.from({ length: 32 }, (_, i) => (w >>> (31 - i)) & 1));
}

/** `padding`: zero bytes before the records in the data section, so record values pass 2^24 (28- and 32-bit records' high bits). */
export function buildMmdb(databaseType: string, records: [cidr: string, value: MmdbValue][], ipVersion: 4 | 6 = 4, recordSize: 24 | 28 | 32 = 24, padding = 0): Buffer {
  type Rec = { node: number } | { data: number } | null;
  const nodes: [Rec, Rec][] = [[null, null]];
  const data: Buffer[] = [Buffer.alloc(padding)];
  let dataLen = padding;
  for (const [cidr, value] of records) {
    const [addr, len] = cidr.split('/') as [string, string];
    const bits = addressBits(addr, ipVersion);
    const depthEnd = Number(len) + (ipVersion === 6 && !addr.includes(':') ? 96 : 0);
    let node = 0;
    for (let depth = 0; depth < depthEnd; depth++) {
      const bit = bits[depth]!;
      const pair = nodes[node]!;
      if (depth === depthEnd - 1) {
        pair[bit] = { data: dataLen };
      } else {
        const next = pair[bit];
        if (next && 'node' in next) node = next.node;
        else {
          nodes.push([null, null]);
          pair[bit] = { node: nodes.length - 1 };
          node = nodes.length - 1;
        }
      }
    }
    const enc = mmdbValue(value);
    data.push(enc);
    dataLen += enc.length;
  }
  const count = nodes.length;
  const nodeBytes = recordSize / 4;
  const tree = Buffer.alloc(count * nodeBytes);
  nodes.forEach((pair, i) => {
    const [l, r] = pair.map((rec) => (rec === null ? count : 'node' in rec ? rec.node : count + 16 + rec.data)) as [number, number];
    const o = i * nodeBytes;
    if (recordSize === 24) {
      tree.writeUIntBE(l, o, 3);
      tree.writeUIntBE(r, o + 3, 3);
    } else if (recordSize === 28) {
      // 28-bit: the middle byte holds the left record's high nibble and the right's.
      tree.writeUIntBE(l & 0xffffff, o, 3);
      tree[o + 3] = ((l >>> 24) << 4) | (r >>> 24);
      tree.writeUIntBE(r & 0xffffff, o + 4, 3);
    } else {
      tree.writeUInt32BE(l, o);
      tree.writeUInt32BE(r, o + 4);
    }
  });
  const meta = mmdbValue({
    node_count: count, record_size: recordSize, ip_version: ipVersion, database_type: databaseType, languages: ['en'],
    binary_format_major_version: 2, binary_format_minor_version: 0, build_epoch: 1_700_000_000, description: { en: 'test' },
  });
  return Buffer.concat([tree, Buffer.alloc(16), ...data, Buffer.from('abcdef4d61784d696e642e636f6d', 'hex'), meta]);
}

