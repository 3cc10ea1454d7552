// Checkout mode of the asset table: the keys the binary will carry, read from the repo.
import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { collectDataAssets, isSea, listAssets, readAsset, repoRoot } from '../../src/runtime/assets.ts';

const root = repoRoot();
const mmdb = 'node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb';

t.test('repoRoot finds the checkout', async (t) => {
  t.equal(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name, 'ivtd');
  t.equal(isSea(), false);
});

t.test('readAsset serves table keys from the checkout', async (t) => {
  t.same(readAsset('mmdb/country.mmdb'), readFileSync(join(root, mmdb)), 'key mapped to its source file');
  t.throws(() => readAsset('package.json'), { name: 'AssetError' }, 'a key outside the table is refused');
  t.throws(() => readAsset('data/sub/x.txt'), { name: 'AssetError' }, 'folder entries are not recursive');
  t.throws(() => readAsset('data/no-such-list.txt'), { name: 'AssetError' }, 'a missing file is an AssetError');
});

t.test('listAssets lists keys under a prefix, each readable', async (t) => {
  t.same(listAssets('mmdb/'), ['mmdb/country.mmdb']);
  const data = listAssets('data/');
  t.ok(data.every((k) => k.startsWith('data/')));
  for (const k of data) t.ok(readAsset(k).byteLength >= 0, k);
});

t.test('collectDataAssets applies the table to a tree', async (t) => {
  const repo = mkdtempSync(join(tmpdir(), 'ivtd-assets-'));
  t.teardown(() => rmSync(repo, { recursive: true, force: true }));
  const put = (rel: string) => {
    mkdirSync(dirname(join(repo, rel)), { recursive: true });
    writeFileSync(join(repo, rel), rel);
  };
  for (const f of ['data/a.txt', 'data/b.csv', 'data/sub/c.txt', 'data/sellers/x.json', 'data/sellers/y.txt']) put(f);
  // The crawler and monitor lists are required: the lists, their licence and source note, nothing else.
  t.throws(() => collectDataAssets(repo), /data\/bot-ip-blocks\/ .* is missing/, 'the crawler and monitor lists are required');
  for (const f of ['data/bot-ip-blocks/crawlers.json', 'data/bot-ip-blocks/LICENSE', 'data/bot-ip-blocks/SOURCE.md', 'data/bot-ip-blocks/old.csv']) put(f);
  t.throws(() => collectDataAssets(repo), { name: 'AssetError' }, 'a required source (the country MMDB) is missing');
  put(mmdb);
  const found = collectDataAssets(repo);
  t.same([...found.keys()].sort(), ['data/a.txt', 'data/bot-ip-blocks/LICENSE', 'data/bot-ip-blocks/SOURCE.md', 'data/bot-ip-blocks/crawlers.json', 'data/sellers/x.json', 'mmdb/country.mmdb']);
  t.equal(found.get('mmdb/country.mmdb'), join(repo, mmdb));
});
