// The store's own settings: DuckDB's temp folder and limit are set deliberately (DuckDB's
// default limit is fixed at the first spill from the space then free), and every setting
// survives a reopen of the database (what a fatal DuckDB error leads to).
import t from 'tap';
import { join } from 'node:path';
import { Store, TEMP_DIR, TEMP_LIMIT_MAX, TEMP_LIMIT_MIN, tempLimitBytes } from '../../src/store/db.ts';

const settings = async (store: Store) =>
  (await store.one<{ dir: string; max: string; mem: string; threads: number }>(
    "SELECT current_setting('temp_directory') AS dir, current_setting('max_temp_directory_size') AS max, current_setting('memory_limit') AS mem, current_setting('threads') AS threads",
  ))!;

t.test('the temp folder is in the data dir and its limit is ours, from the file system size', async (t) => {
  const dir = t.testdir();
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  const limit = tempLimitBytes(dir);
  t.ok(limit >= TEMP_LIMIT_MIN && limit <= TEMP_LIMIT_MAX, 'within its bounds');
  const s = await settings(store);
  t.equal(s.dir, join(dir, TEMP_DIR));
  const shown = limit >= 2 ** 30 ? `${(limit / 2 ** 30).toFixed(1)} GiB` : `${(limit / 2 ** 20).toFixed(1)} MiB`;
  t.equal(s.max, shown, 'max_temp_directory_size set, not left to DuckDB');
});

t.test('settings survive a reopen; a reopen is done once per generation', async (t) => {
  const dir = t.testdir();
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  await store.set('memory_limit', "'64MB'");
  await store.set('threads', 1);
  await store.run('CREATE TABLE kept (n INTEGER)');
  await store.run('INSERT INTO kept VALUES (42)');
  const before = await settings(store);
  const gen = store.generation;
  await store.reopen(gen);
  t.equal(store.generation, gen + 1, 'a new instance');
  t.same(await settings(store), before, 'the same settings on the new instance');
  t.same(await store.all('SELECT n FROM kept'), [{ n: 42 }], 'the same data');
  await store.reopen(gen);
  t.equal(store.generation, gen + 1, 'a reopen for a generation already replaced does nothing');
  const conn = await store.connection();
  t.equal(conn.generation, store.generation, 'connections know their instance');
  conn.close();
});

t.test('close() under queries in flight: they end, new ones are refused, then the database closes', async (t) => {
  const dir = t.testdir();
  const store = await Store.open(dir);
  await store.run('CREATE TABLE kept (n BIGINT)');
  // Long enough to be running when close() is called.
  const slow = store.all<{ n: bigint }>('SELECT count(*) AS n FROM range(60000000) r(x) WHERE x % 7 = 3');
  const write = store.tx(async (q) => {
    await q.run('INSERT INTO kept SELECT count(*) FROM range(20000000) r(x) WHERE x % 3 = 0');
  });
  await new Promise((r) => setTimeout(r, 5));
  // Closing DuckDB under them would leave them unsettled for ever (the file's tap timeout) or crash.
  const closing = store.close();
  await t.rejects(store.one('SELECT 1'), /the store is closed/, 'a new query is refused at once');
  t.same(await slow, [{ n: 8571429n }], 'the read under way ends with its answer');
  await write;
  await closing;
  // Closed for real: the file opens again in this process, with the write in it.
  const again = await Store.open(dir);
  t.teardown(() => again.close());
  t.same(await again.all('SELECT n FROM kept'), [{ n: 6666667n }], 'the transaction under way was committed');
  t.equal(await again.close().then(() => 'closed'), 'closed', 'close() with nothing under way resolves at once');
});
