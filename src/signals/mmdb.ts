// Opening MaxMind DB files (GeoIP2/GeoLite2 Country, ASN, Anonymous-IP, or compatible)
// from bytes, with a check that they decode and carry the fields we read.
import { LRUCache } from 'lru-cache';
import { Reader, type Response } from 'maxmind';
import type { ParsedIp } from './ip-address.ts';
import { formatIp } from './ip-address.ts';

const MMDB_DECODE_CACHE = 10_000;

// Well-known public resolvers' addresses, used to probe that a database decodes.
const PROBE_IPS = ['8.8.8.8', '1.1.1.1', '9.9.9.9', '2001:4860:4860::8888'];

/**
 * Opens an MMDB from bytes, checking that it decodes and (when a probe address is found)
 * that its records carry `field`; throws an Error naming `label` otherwise.
 */
export function openMmdb<T extends Response>(bytes: Uint8Array, label: string, field?: (rec: T) => unknown): Reader<T> {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let reader: Reader<T>;
  const found: T[] = [];
  try {
    // Many networks share one record (a country, an ASN): cache decoded records by offset;
    // it matters for MaxMind's large multi-language records.
    reader = new Reader<T>(buf, { cache: new LRUCache<number, object>({ max: MMDB_DECODE_CACHE }) });
    const md = reader.metadata;
    if (md.binaryFormatMajorVersion !== 2 || (md.ipVersion !== 4 && md.ipVersion !== 6) || !(md.nodeCount > 0)) {
      throw new Error(`unsupported metadata (format ${md.binaryFormatMajorVersion}, ip version ${md.ipVersion})`);
    }
    if (buf.length < md.searchTreeSize + 16) throw new Error('file is shorter than its search tree');
    for (const ip of PROBE_IPS) {
      if (md.ipVersion === 4 && ip.includes(':')) continue;
      const rec = reader.get(ip);
      if (rec !== null) found.push(rec);
    }
  } catch (e) {
    throw new Error(`${label}: not a readable MaxMind DB file (${(e as Error).message})`);
  }
  if (field && found.length > 0 && found.every((r) => field(r) === undefined)) {
    throw new Error(`${label}: records lack the expected fields (database type "${reader.metadata.databaseType}")`);
  }
  return reader;
}

/**
 * The record for `ip`, or null. An IPv4-only database (metadata ipVersion 4) has nothing
 * to say about IPv6 addresses: it is not asked (maxmind would answer from unrelated
 * records), and IPv4-mapped addresses reach it as IPv4 (parseIp unmaps them).
 */
export function mmdbGet<T extends Response>(reader: Reader<T>, ip: ParsedIp, key: string = formatIp(ip)): T | null {
  if (ip.v === 6 && reader.metadata.ipVersion === 4) return null;
  return reader.get(key);
}
