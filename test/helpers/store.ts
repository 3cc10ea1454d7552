// A fresh DuckDB store per test, and the StoreError check the store tests share.
import type { Test } from 'tap';
import { Store } from '../../src/store/db.ts';
import { StoreError } from '../../src/store/store-error.ts';

export async function openStore(t: Test): Promise<Store> {
  const store = await Store.open(t.testdir());
  t.teardown(() => store.close());
  return store;
}

export async function rejectsWith(t: Test, p: Promise<unknown>, code: string, msg: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(e instanceof StoreError, `rejects with StoreError (${code})`);
  t.equal((e as StoreError).code, code);
  t.match((e as StoreError).message, msg);
}
