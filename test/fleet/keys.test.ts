// Key publication (full instance → ClickHouse) and key pulls (ClickHouse → edge) against a
// real ClickHouse: changes travel, revocations travel, the edge keeps its last set across a
// restart while ClickHouse is down, and publication recovers after an outage.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { KeyPublisher, KeyPuller, liveAt, PULL_INTERVAL_MS } from '../../src/fleet/key-sync.ts';
import { migrateClickHouse } from '../../src/fleet/schema.ts';
import { parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';
import { log } from '../../src/base/log.ts';
import type { LiveKey } from '../../src/store/api-keys.ts';
import { Store } from '../../src/store/db.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';

log.level = 'silent';

const key = (n: number, expires: number | null = null): LiveKey => ({
  customer_id: `c${n}`,
  partner_id: `p${n}`,
  key_hash: `h${n}`.padEnd(64, '0'),
  expires_at_ms: expires,
});
const hashes = (keys: LiveKey[]) => keys.map((k) => k.key_hash).sort();

t.test('liveAt drops keys whose grace ended', async (t) => {
  t.same(hashes(liveAt([key(1), key(2, 1000), key(3, 3000)], 2000)), [key(1).key_hash, key(3).key_hash]);
});

t.test('the 5 s budget for a key change to reach the edges', async (t) => {
  // Publication is immediate (keysChanged → nudge, test/fleet/fleet.test.ts); an edge pulls
  // at least every PULL_INTERVAL_MS, leaving the rest of 5 s for the two queries and the push.
  t.ok(PULL_INTERVAL_MS <= 2000, `edges pull every ${PULL_INTERVAL_MS} ms`);
});

t.test('against a real ClickHouse', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const server = await startClickHouse();
  t.teardown(() => server.destroy());
  let n = 0;

  async function fleet(t: Test) {
    const db = `keys_${++n}`;
    const ch = new ClickHouse(parseClickHouseUrl(server.url(db)));
    t.teardown(() => ch.close());
    await migrateClickHouse(ch);
    return ch;
  }

  function edgeStore(t: Test, dir = mkdtempSync(join(tmpdir(), 'ivtd-edge-'))) {
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  t.test('a publication reaches the edge; rotation and revocation too; nothing changes, nothing is published', async (t) => {
    const ch = await fleet(t);
    let live = [key(1), key(2)];
    const pub = new KeyPublisher(ch, async () => live);
    const store = await Store.open(edgeStore(t));
    t.teardown(() => store.close());
    let changes = 0;
    const edge = new KeyPuller(ch, store, () => changes++);
    t.equal(await edge.loadLocal(), null, 'nothing kept yet');
    t.equal(await edge.pull(), false, 'nothing published yet');

    await pub.publishIfChanged();
    t.equal(await edge.pull(), true);
    t.same(hashes(edge.liveKeys()), hashes(live));
    t.equal(changes, 1);
    const v1 = edge.setVersion;

    await pub.publishIfChanged();
    t.equal(await edge.pull(), false, 'same set: no new version');

    live = [key(1, Date.now() + 60_000), key(2), key(3)]; // key 1 rotated out with a grace period
    await pub.publishIfChanged();
    t.equal(await edge.pull(), true);
    t.ok(edge.setVersion > v1, 'versions grow');
    t.same(hashes(edge.liveKeys()), hashes(live));
    t.ok(edge.liveKeys().find((k) => k.customer_id === 'c1')!.expires_at_ms! > Date.now(), 'the grace end travels');

    live = [key(2), key(3)]; // key 1 revoked
    await pub.publishIfChanged();
    await edge.pull();
    t.same(hashes(edge.liveKeys()), hashes(live), 'revoked key gone');

    live = [];
    await pub.publishIfChanged();
    await edge.pull();
    t.same(edge.liveKeys(), [], 'an empty set is a set');
    t.equal(changes, 4);
  });

  t.test('a retried publication (same version stored twice) is read as one set', async (t) => {
    const ch = await fleet(t);
    const rows = [key(7), key(8)].map((k) => ({ version: 5, published_at: 0, ...k, expires_at_ms: 0 }));
    const head = { version: 5, published_at: 0, customer_id: '', partner_id: '', key_hash: '', expires_at_ms: 0 };
    await ch.insert('prebid_keys', [head, ...rows]);
    await ch.insert('prebid_keys', [head, ...rows]);
    const store = await Store.open(edgeStore(t));
    t.teardown(() => store.close());
    const edge = new KeyPuller(ch, store, () => undefined);
    await edge.pull();
    t.equal(edge.liveKeys().length, 2);
  });

  t.test('an edge restarted while ClickHouse is down serves the set it kept', async (t) => {
    const ch = await fleet(t);
    const pub = new KeyPublisher(ch, async () => [key(1), key(2, Date.now() + 3_600_000)]);
    await pub.publishIfChanged();
    const dir = edgeStore(t);
    {
      const store = await Store.open(dir);
      const edge = new KeyPuller(ch, store, () => undefined);
      await edge.pull();
      store.close();
    }
    const down = new ClickHouse(parseClickHouseUrl('http://127.0.0.1:1/ivtd'));
    t.teardown(() => down.close());
    const store = await Store.open(dir);
    t.teardown(() => store.close());
    const edge = new KeyPuller(down, store, () => undefined);
    t.equal(await edge.loadLocal(), 2, 'two keys kept');
    await t.rejects(edge.pull(), /unreachable/, 'ClickHouse is down');
    t.same(hashes(edge.liveKeys()), hashes([key(1), key(2)]), 'still serving them');
  });

  t.test('publication waits out an outage and goes through when ClickHouse is back', async (t) => {
    const ch = await fleet(t);
    let live = [key(1)];
    const pub = new KeyPublisher(ch, async () => live);
    await pub.publishIfChanged();
    await server.stop();
    live = [key(1), key(9)];
    await t.rejects(pub.publishIfChanged(), /unreachable/);
    await server.start();
    await pub.publishIfChanged();
    const store = await Store.open(edgeStore(t));
    t.teardown(() => store.close());
    const edge = new KeyPuller(ch, store, () => undefined);
    await edge.pull();
    t.same(hashes(edge.liveKeys()), hashes(live));
    const versions = await ch.rows<{ v: string }>('SELECT DISTINCT version AS v FROM prebid_keys');
    t.equal(versions.length, 2, 'one version per distinct set');
  });
});
