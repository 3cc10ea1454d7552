// Reverse-DNS verdicts on crawlers whose published list is not authoritative (a whole ASN:
// Yandex, Meta), shared between the lookup threads and the main thread, in fixed memory.
// A lookup thread reads a verdict and, when there is none, leaves a request in a small
// queue; it never waits and does no I/O. The main thread (src/data/crawler-dns-resolver.ts)
// drains the queue, resolves, and writes the verdicts with their expiry. Both structures
// are fixed-size: a full queue drops the request (asked again by a later lookup), a full
// neighbourhood of the table gives up its entry that expires first.
import type { ParsedIp } from './ip-address.ts';
import { DNS_UNKNOWN, type DnsVerdicts } from './bot-services.ts';

/** Verdict slots (8 words each: seq, 4 address words, service key, state, expiry second). */
export const DNS_TABLE_SLOTS = 8192;
/** Slots one key may sit in (its neighbourhood). */
const PROBE = 8;
/** Requests the queue holds between two drains. */
export const DNS_QUEUE_SLOTS = 256;
const W = 8;

export interface CrawlerDnsMemory {
  /** [0]: queue write counter; [1]: 1 when checks run (the main thread's resolver is on). */
  readonly control: SharedArrayBuffer;
  readonly table: SharedArrayBuffer;
  readonly queue: SharedArrayBuffer;
}

/** Bytes behind it (fixed). */
export const CRAWLER_DNS_BYTES = 8 + (DNS_TABLE_SLOTS + DNS_QUEUE_SLOTS) * W * 4;

export function allocateCrawlerDns(): CrawlerDnsMemory {
  return { control: new SharedArrayBuffer(8), table: new SharedArrayBuffer(DNS_TABLE_SLOTS * W * 4), queue: new SharedArrayBuffer(DNS_QUEUE_SLOTS * W * 4) };
}

/** The four words of an address (IPv4 as ::ffff:a.b.c.d). */
export function addressWords(ip: ParsedIp, out: Int32Array | Uint32Array, at = 0): void {
  if (ip.v === 4) {
    out[at] = 0;
    out[at + 1] = 0;
    out[at + 2] = 0xffff;
    out[at + 3] = ip.n | 0;
  } else {
    for (let k = 0; k < 4; k++) out[at + k] = ip.w[k]! | 0;
  }
}

function home(k: Int32Array, service: number): number {
  let h = Math.imul(service ^ 0x9e3779b9, 0x85ebca6b);
  for (let i = 0; i < 4; i++) h = Math.imul(h ^ k[i]!, 0xcc9e2d51) ^ (h >>> 15);
  h ^= h >>> 13;
  return (h >>> 0) % DNS_TABLE_SLOTS;
}

/** One thread's view (lookup threads and the main thread alike). */
export class CrawlerDns implements DnsVerdicts {
  private readonly control: Int32Array;
  private readonly table: Int32Array;
  private readonly queue: Int32Array;
  private readonly key = new Int32Array(4);

  constructor(memory: CrawlerDnsMemory) {
    this.control = new Int32Array(memory.control);
    this.table = new Int32Array(memory.table);
    this.queue = new Int32Array(memory.queue);
  }

  get enabled(): boolean {
    return Atomics.load(this.control, 1) === 1;
  }

  /** Main thread: checks run (the resolver is started) or not. */
  setEnabled(on: boolean): void {
    Atomics.store(this.control, 1, on ? 1 : 0);
  }

  state(ip: ParsedIp, service: number, nowSec: number): number {
    const k = this.key;
    addressWords(ip, k);
    const t = this.table;
    const h = home(k, service);
    for (let p = 0; p < PROBE; p++) {
      const at = ((h + p) % DNS_TABLE_SLOTS) * W;
      const seq = Atomics.load(t, at);
      if (seq === 0 || (seq & 1) === 1) continue;
      if (t[at + 5] !== service || t[at + 1] !== k[0] || t[at + 2] !== k[1] || t[at + 3] !== k[2] || t[at + 4] !== k[3]) continue;
      const state = t[at + 6]!;
      const expires = t[at + 7]! >>> 0;
      // Written meanwhile: unknown rather than torn.
      if (Atomics.load(t, at) !== seq) return DNS_UNKNOWN;
      return expires > nowSec ? state : DNS_UNKNOWN;
    }
    return DNS_UNKNOWN;
  }

  ask(ip: ParsedIp, service: number): void {
    const q = this.queue;
    const at = ((Atomics.add(this.control, 0, 1) >>> 0) % DNS_QUEUE_SLOTS) * W;
    if (Atomics.compareExchange(q, at, 0, 1) !== 0) return; // taken: dropped, a later lookup asks again
    addressWords(ip, q, at + 1);
    q[at + 5] = service;
    Atomics.store(q, at, 2);
  }

  /** Main thread: the waiting requests (address words and service key), taken off the queue. */
  drain(): Array<{ words: [number, number, number, number]; service: number }> {
    const q = this.queue;
    const out: Array<{ words: [number, number, number, number]; service: number }> = [];
    for (let i = 0; i < DNS_QUEUE_SLOTS; i++) {
      const at = i * W;
      if (Atomics.load(q, at) !== 2) continue;
      out.push({ words: [q[at + 1]!, q[at + 2]!, q[at + 3]!, q[at + 4]!], service: q[at + 5]! });
      Atomics.store(q, at, 0);
    }
    return out;
  }

  /** Main thread (the only writer): the verdict on (address words, service) until expiresSec. */
  put(words: readonly number[], service: number, state: number, expiresSec: number, nowSec: number): void {
    const k = this.key;
    for (let i = 0; i < 4; i++) k[i] = words[i]! | 0;
    const t = this.table;
    const h = home(k, service);
    let pick = -1;
    let pickExpires = Infinity;
    for (let p = 0; p < PROBE; p++) {
      const at = ((h + p) % DNS_TABLE_SLOTS) * W;
      const seq = t[at]!;
      if (seq !== 0 && t[at + 5] === service && t[at + 1] === k[0] && t[at + 2] === k[1] && t[at + 3] === k[2] && t[at + 4] === k[3]) {
        pick = at;
        break;
      }
      const expires = seq === 0 ? -1 : t[at + 7]! >>> 0 <= nowSec ? 0 : t[at + 7]! >>> 0;
      if (expires < pickExpires) {
        pickExpires = expires;
        pick = at;
      }
    }
    Atomics.add(t, pick, 1); // odd: being written
    t[pick + 1] = k[0]!;
    t[pick + 2] = k[1]!;
    t[pick + 3] = k[2]!;
    t[pick + 4] = k[3]!;
    t[pick + 5] = service;
    t[pick + 6] = state;
    t[pick + 7] = expiresSec | 0;
    Atomics.add(t, pick, 1); // even again
  }
}

export { checkCrawlerDns, crawlerDnsServers } from '../base/crawler-dns-option.ts';

