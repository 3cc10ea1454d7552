// `ivtd --version` from a checkout: version, "dev" build date and the embedded data's
// dates, read through the same asset keys the binary carries (the binary's own output is
// checked by test/smoke-binary.sh).
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../src/runtime/assets.ts';
import { formatVersion, versionInfo, type VersionInfo } from '../../src/ops/version.ts';
import { runIvtd } from '../cli/run-cli.ts';

const root = repoRoot();
const json = (rel: string) => JSON.parse(readFileSync(join(root, rel), 'utf8')) as Record<string, any>;

t.test('versionInfo reads the embedded data descriptions', async (t) => {
  const v = versionInfo();
  const meta = json('data/generated/asn.meta.json');
  const mmdb = json('node_modules/@ip-location-db/geo-whois-asn-country-mmdb/package.json');
  const sellerFiles = readdirSync(join(root, 'data/sellers')).filter((f) => f.endsWith('.json'));
  const sellerRecords = sellerFiles.reduce((n, f) => n + (json(`data/sellers/${f}`).sellers as unknown[]).length, 0);
  t.equal(v.version, json('package.json').version);
  t.equal(v.builtAt, 'dev', 'a checkout has no build date');
  t.same(v.data.asn, { builtAt: meta.built_at, source: `${meta.source.package}@${meta.source.version}`, ranges: meta.v4_ranges + meta.v6_ranges });
  t.same(v.data.countryMmdb, { package: mmdb.name, version: mmdb.version });
  t.same(v.data.sellers, { files: sellerFiles.length, records: sellerRecords });
  // The crawler and monitor lists: source, licence and date as data/bot-ip-blocks/snapshot.json says, services counted.
  const snap = json('data/bot-ip-blocks/snapshot.json');
  t.match(v.data.botLists, { source: snap.source, commit: snap.commit, date: snap.date, licence: 'CC0-1.0' });
  t.same(v.data.botLists!.services, {
    crawlers: Object.keys(json('data/bot-ip-blocks/crawlers.json').services).length,
    monitoring: Object.keys(json('data/bot-ip-blocks/monitoring.json').services).length,
  });
  t.match(formatVersion(v), new RegExp(`bot lists +crawlers \\d+ services, monitoring \\d+ services; https://github\\.com/ipverse/bot-ip-blocks @ ${snap.commit.slice(0, 12)}, ${snap.date}, licence CC0-1\\.0`));
  t.ok(sellerRecords > 0, 'the example sellers files carry records');
});

t.test('formatVersion says what is unknown instead of failing', async (t) => {
  const v: VersionInfo = { version: '9.9.9', builtAt: '2026-01-02T03:04:05.000Z', node: 'v20.0.0', data: { asn: null, countryMmdb: null, sellers: { files: 0, records: 0 }, botLists: null } };
  const text = formatVersion(v);
  t.match(text, /^ivtd 9\.9\.9\n/);
  t.match(text, /built +2026-01-02T03:04:05\.000Z/);
  t.match(text, /bot lists +not embedded/);
  t.match(text, /asn table +not built \(npm run build:data\)/);
  t.match(text, /country mmdb +unknown/);
});

t.test('ivtd --version and --version --json', async (t) => {
  // Expected from the files themselves, not from versionInfo()/formatVersion().
  const meta = json('data/generated/asn.meta.json');
  const mmdb = json('node_modules/@ip-location-db/geo-whois-asn-country-mmdb/package.json');
  const sellerFiles = readdirSync(join(root, 'data/sellers')).filter((f) => f.endsWith('.json'));
  const sellerRecords = sellerFiles.reduce((n, f) => n + (json(`data/sellers/${f}`).sellers as unknown[]).length, 0);
  const version = json('package.json').version as string;
  const ranges = (meta.v4_ranges as number) + (meta.v6_ranges as number);
  const source = `${meta.source.package}@${meta.source.version}`;
  const snap = json('data/bot-ip-blocks/snapshot.json');
  const services = {
    crawlers: Object.keys(json('data/bot-ip-blocks/crawlers.json').services).length,
    monitoring: Object.keys(json('data/bot-ip-blocks/monitoring.json').services).length,
  };

  const text = await runIvtd(['--version']);
  t.equal(text.code, 0, text.stderr);
  t.equal(
    text.stdout,
    `ivtd ${version}\n` +
      `  built          dev (node ${process.version})\n` +
      `  asn table      built ${meta.built_at} from ${source}, ${ranges} ranges\n` +
      `  country mmdb   ${mmdb.name}@${mmdb.version}\n` +
      `  sellers.json   ${sellerFiles.length} files, ${sellerRecords} sellers (embedded; <data-dir>/sellers/ adds to them)\n` +
      `  bot lists      crawlers ${services.crawlers} services, monitoring ${services.monitoring} services; ${snap.source} @ ${snap.commit.slice(0, 12)}, ${snap.date}, licence ${snap.licence}\n`,
  );
  const j = await runIvtd(['--version', '--json']);
  t.equal(j.code, 0, j.stderr);
  t.same(JSON.parse(j.stdout), {
    version,
    builtAt: 'dev',
    node: process.version,
    data: {
      asn: { builtAt: meta.built_at, source, ranges },
      countryMmdb: { package: mmdb.name, version: mmdb.version },
      sellers: { files: sellerFiles.length, records: sellerRecords },
      botLists: { ...snap, services },
    },
  });
});
