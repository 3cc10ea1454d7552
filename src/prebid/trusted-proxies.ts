// --trusted-proxies on a lookup thread: the peers (SSAI servers, the operator's load
// balancer) whose X-Device-IP / X-Forwarded-For / X-Device-User-Agent headers name the
// device of an impression beacon. Addresses and CIDR blocks, parsed once; a peer is
// checked with a loop over a handful of ranges.
import { parseIp, type ParsedIp } from '../signals/ip-address.ts';

interface Range4 { v: 4; net: number; mask: number }
interface Range6 { v: 6; words: Uint32Array; bits: number }

export class TrustedProxies {
  private readonly ranges: Array<Range4 | Range6> = [];

  /** `list`: items such as 127.0.0.0/8, ::1, 10.1.2.3 (config.ts checked them; a bad one is skipped). */
  constructor(list: readonly string[]) {
    for (const item of list) {
      const [addr, len] = item.trim().split('/');
      const ip = parseIp(addr ?? '');
      if (ip === null) continue;
      if (ip.v === 4) {
        const bits = len === undefined ? 32 : Math.min(32, Number(len));
        const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
        this.ranges.push({ v: 4, net: (ip.n & mask) >>> 0, mask });
      } else {
        this.ranges.push({ v: 6, words: Uint32Array.from(ip.w), bits: len === undefined ? 128 : Math.min(128, Number(len)) });
      }
    }
  }

  has(ip: ParsedIp): boolean {
    for (const r of this.ranges) {
      if (r.v !== ip.v) continue;
      if (r.v === 4) {
        if ((((ip as { n: number }).n & r.mask) >>> 0) === r.net) return true;
        continue;
      }
      if (prefixEqual(r.words, (ip as { w: Uint32Array }).w, r.bits)) return true;
    }
    return false;
  }
}

function prefixEqual(a: Uint32Array, b: Uint32Array, bits: number): boolean {
  for (let i = 0; i < 4 && bits > 0; i++, bits -= 32) {
    const mask = bits >= 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
    if (((a[i]! & mask) >>> 0) !== ((b[i]! & mask) >>> 0)) return false;
  }
  return true;
}
