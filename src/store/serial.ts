// Writes that must not run side by side. DuckDB's transactions are optimistic: two that
// update the same row at once do not wait for each other, the second fails ("Conflict on
// update!") and rolls back. Changes of one thing (a customer's policy, its keys, its
// feedback) that read, then write, then act on what they wrote are queued one at a time
// per (store, key) in this process, the only writer of its database; a conflict with some
// other writer of the same rows (a background flush) is retried a few times.
import { StoreError } from './store-error.ts';

const queues = new WeakMap<object, Map<string, Promise<unknown>>>();

/** Runs fn once every earlier call with the same `owner` and `key` has settled (succeeded or failed). */
export function oneAtATime<T>(owner: object, key: string, fn: () => Promise<T>): Promise<T> {
  let byKey = queues.get(owner);
  if (byKey === undefined) queues.set(owner, (byKey = new Map()));
  const next = (byKey.get(key) ?? Promise.resolve()).then(fn);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  byKey.set(key, settled);
  // The last in line leaves no entry behind: the map holds only keys with work queued.
  void settled.then(() => {
    if (byKey.get(key) === settled) byKey.delete(key);
  });
  return next;
}

/** A DuckDB write-write conflict (the transaction was rolled back: running it again is safe). */
export function isWriteConflict(e: unknown): boolean {
  return e instanceof Error && !(e instanceof StoreError) && /conflict/i.test(e.message);
}

export const CONFLICT_RETRIES = 5;

/**
 * fn, run again (up to CONFLICT_RETRIES times in all, after a short random pause) while it
 * fails on a write conflict. fn must be one transaction, or start over from nothing.
 */
export async function retryConflicts<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt >= CONFLICT_RETRIES || !isWriteConflict(e)) throw e;
      await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
    }
  }
}
