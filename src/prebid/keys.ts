// Pre-bid API keys as the lookup thread sees them: partner → hashed keys, pushed by the
// main thread whenever the live set changes. Verified raw keys are memoised so the steady
// state costs one Map lookup instead of a SHA-256 per request; the memo is bounded (its
// size comes from the memory budget) and holds copies, never slices of a request.
import { hashKey } from '../base/secrets.ts';
import { ownString } from '../memory/own-string.ts';
import type { LiveKey } from '../store/api-keys.ts';

interface Entry {
  customerId: string;
  partnerId: string;
  expiresAt: number; // ms, Infinity for current keys
  /** The key itself (an own copy) once a request has shown it, else ''. */
  raw: string;
}

/** Longest key looked up: anything longer cannot be a key we issued. */
export const MAX_KEY_LENGTH = 256;

export class KeyTable {
  private byHash = new Map<string, Entry>();
  /** Each partner's customer and the latest expiry among its live keys (an operator's filter acts for a partner: src/filter/). */
  private byPartner = new Map<string, { customerId: string; expiresAt: number }>();
  private memo = new Map<string, Entry>();
  /**
   * The last key authorized and its entry: a host's lookups mostly carry one customer's key,
   * and comparing the request's key with it is cheaper than hashing it for the memo.
   */
  private lastKey = '';
  private lastEntry: Entry | null = null;

  constructor(private readonly memoMax = 4096) {}

  replace(records: readonly LiveKey[]): void {
    const next = new Map<string, Entry>();
    for (const r of records) {
      next.set(r.key_hash, {
        customerId: r.customer_id,
        partnerId: r.partner_id.toLowerCase(),
        expiresAt: r.expires_at_ms ?? Infinity,
        raw: '',
      });
    }
    const partners = new Map<string, { customerId: string; expiresAt: number }>();
    for (const e of next.values()) {
      const p = partners.get(e.partnerId);
      if (p === undefined || p.expiresAt < e.expiresAt) partners.set(e.partnerId, { customerId: e.customerId, expiresAt: e.expiresAt });
    }
    this.byHash = next;
    this.byPartner = partners;
    this.memo = new Map();
    this.lastKey = '';
    this.lastEntry = null;
  }

  /** The customer id when `key` is a live key of `partnerId`, else null. */
  authorize(partnerId: string, key: string, now: number): string | null {
    let e = key === this.lastKey ? this.lastEntry : this.memo.get(key);
    if (e === undefined || e === null) {
      if (key.length > MAX_KEY_LENGTH) return null;
      e = this.byHash.get(hashKey(key));
      if (e === undefined) return null;
      // Only live keys are memoised; the memo is bounded and reset when full.
      if (this.memo.size >= this.memoMax) this.memo.clear();
      if (e.raw === '') e.raw = ownString(key);
      this.memo.set(e.raw, e);
    }
    if (e !== this.lastEntry) {
      this.lastKey = e.raw;
      this.lastEntry = e;
    }
    if (e.partnerId !== partnerId || e.expiresAt <= now) return null;
    return e.customerId;
  }

  /** The customer of `partnerId` (lowercase) while it has a live key, else null: what a keyed lookup of that partner would be counted for. */
  customerOf(partnerId: string, now: number): string | null {
    const p = this.byPartner.get(partnerId);
    return p === undefined || p.expiresAt <= now ? null : p.customerId;
  }

  get size(): number {
    return this.byHash.size;
  }
}
