// Pre-bid API keys as the lookup thread sees them: partner → hashed keys, pushed by the
// main thread whenever keys change. Verified raw keys are memoised so the steady state
// costs one Map lookup instead of a SHA-256 per request.
import { hashKey } from '../store/secrets.ts';

export interface KeyRecord {
  customer_id: string;
  partner_id: string;
  key_hash: string; // sha256 hex of the key
  expires_at_ms: number | null;
}

interface Entry {
  customerId: string;
  partnerId: string;
  expiresAt: number; // ms, Infinity for current keys
}

const MEMO_MAX = 4096;

export class KeyTable {
  private byHash = new Map<string, Entry>();
  private memo = new Map<string, Entry>();
  loaded = false;

  replace(records: KeyRecord[]): void {
    const next = new Map<string, Entry>();
    for (const r of records) {
      next.set(r.key_hash, {
        customerId: r.customer_id,
        partnerId: r.partner_id.toLowerCase(),
        expiresAt: r.expires_at_ms ?? Infinity,
      });
    }
    this.byHash = next;
    this.memo = new Map();
    this.loaded = true;
  }

  /** The customer id when `key` is a live key of `partnerId`, else null. */
  authorize(partnerId: string, key: string, now: number): string | null {
    let e = this.memo.get(key);
    if (e === undefined) {
      if (key.length > 256) return null;
      e = this.byHash.get(hashKey(key));
      if (e === undefined) return null;
      // Only live keys are memoised; the memo is bounded and reset when full.
      if (this.memo.size >= MEMO_MAX) this.memo.clear();
      this.memo.set(key, e);
    }
    if (e.partnerId !== partnerId || e.expiresAt <= now) return null;
    return e.customerId;
  }

  get size(): number {
    return this.byHash.size;
  }
}
