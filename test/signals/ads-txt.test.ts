import t from 'tap';
import {
  ADS_TXT_LIMITS,
  ADS_TXT_REASONS,
  ADS_TXT_RESULT,
  AdsTxtIndex,
  isDomainName,
  parseAdsTxt,
} from '../../src/signals/ads-txt.ts';
import { buildAdsTxtIndex, parseAppDevelopers, rootDomain, type AdsTxtFileInput } from '../../src/signals/ads-txt-build.ts';
import { ADS_TXT_RECORD_BYTES, SHARES, nativeMb, planMemory, runtimeMb } from '../../src/memory/budget.ts';

t.test('parser: records, variables, comments, extensions', async (t) => {
  const p = parseAdsTxt(
    '\ufeff# ads.txt for news.example\r\n' +
      'exchange1.example, 1234, DIRECT, f08c47fec0942fa0\r\n' +
      'Exchange2.Example,abc-9,reseller\n' +
      'exchange3.example, 77, DIRECT; {"ext": 1}\r' +
      'OWNERDOMAIN=News-Group.example\n' +
      'ownerdomain=second.example\n' +
      'MANAGERDOMAIN=manager.example, US\n' +
      'MANAGERDOMAIN = other-manager.example\n' +
      'SUBDOMAIN=sports.news.example\n' +
      'INVENTORYPARTNERDOMAIN=partner.example\n' +
      'CONTACT=ads@news.example\n' +
      '   \n' +
      '\texchange4.example ,  55 , DIRECT   # trailing comment\n',
  );
  t.same(p.records, [
    { system: 'exchange1.example', account: '1234', relationship: 'DIRECT' },
    { system: 'exchange2.example', account: 'abc-9', relationship: 'RESELLER' },
    { system: 'exchange3.example', account: '77', relationship: 'DIRECT' },
    { system: 'exchange4.example', account: '55', relationship: 'DIRECT' },
  ]);
  t.equal(p.ownerDomain, 'news-group.example', 'first OWNERDOMAIN only');
  t.same(p.managerDomains, ['manager.example', 'other-manager.example']);
  t.same(p.subdomains, ['sports.news.example']);
  t.same(p.inventoryPartners, ['partner.example']);
  t.equal(p.malformed, 0);
  t.equal(p.placeholder, false);
});

t.test('parser: malformed lines are counted and skipped', async (t) => {
  const p = parseAdsTxt(
    [
      'exchange1.example, 1234', // two fields
      'exchange1.example, 1234, PARTNER', // bad relationship
      'not a domain, 1234, DIRECT',
      'https://exchange1.example, 1234, DIRECT',
      'exchange1.example, , DIRECT',
      ',,,,,,,,',
      '<html><body>Not found</body></html>',
      'exchange1.example, 1, DIRECT',
    ].join('\n'),
  );
  t.equal(p.records.length, 1);
  t.equal(p.malformed, 7);
  const ph = parseAdsTxt('placeholder.example.com, placeholder, DIRECT, placeholder\n');
  t.equal(ph.placeholder, true);
  t.same(ph.records, []);
});

t.test('parser: hostile input stays bounded and linear', async (t) => {
  const long = 'a'.repeat(ADS_TXT_LIMITS.maxLineLength + 1);
  const p = parseAdsTxt(`${long}\nexchange1.example, 1, DIRECT\n`);
  t.equal(p.records.length, 1, 'a line over the cap is skipped, the next one read');
  t.equal(p.malformed, 1);

  const many = 'exchange1.example, 1, DIRECT\n'.repeat(ADS_TXT_LIMITS.maxRecords + 10);
  const q = parseAdsTxt(many);
  t.equal(q.records.length, ADS_TXT_LIMITS.maxRecords);
  t.equal(q.truncated, true);

  const blank = '\n'.repeat(ADS_TXT_LIMITS.maxLines + 5) + 'exchange1.example, 1, DIRECT\n';
  t.equal(parseAdsTxt(blank).truncated, true, 'line cap counts blank lines too');

  // Pathological shapes for regex-based parsers: long runs of separators and '='.
  for (const s of [',='.repeat(500_000), ' '.repeat(1_000_000) + ',', 'x.example,'.repeat(200_000), '='.repeat(1_000_000), '\r'.repeat(1_000_000)]) {
    const t0 = performance.now();
    parseAdsTxt(s);
    t.ok(performance.now() - t0 < 2000, `parsed ${s.length} hostile characters quickly`);
  }
  const dirs = Array.from({ length: 100 }, (_, i) => `SUBDOMAIN=s${i}.pub.example`).join('\n');
  t.equal(parseAdsTxt(dirs).subdomains.length, ADS_TXT_LIMITS.maxDirectives, 'directives are capped');
});

t.test('domain names and root domains', async (t) => {
  for (const ok of ['a.example', 'news-site.co.uk', 'x1.y2.example']) t.ok(isDomainName(ok), ok);
  for (const bad of ['example', 'a..example', '-a.example', 'a-.example', 'A.example', 'a.example.', 'a_b.example', `${'a'.repeat(64)}.example`, 'é.example']) {
    t.notOk(isDomainName(bad), bad);
  }
  t.equal(rootDomain('www.news.example.co.uk'), 'example.co.uk');
  t.equal(rootDomain('someone.blogspot.com'), 'someone.blogspot.com', 'private suffixes count (each blog is its own publisher)');
  t.equal(rootDomain('192.0.2.1'), null);
  t.equal(rootDomain('localhost'), null);
});

// ---------------------------------------------------------------------------------------

const SELLERS_X = JSON.stringify({
  sellers: [
    { seller_id: 'pub-owner', seller_type: 'PUBLISHER', domain: 'newsgroup.example' },
    { seller_id: 'pub-other', seller_type: 'PUBLISHER', domain: 'someone-else.example' },
    { seller_id: 'int-1', seller_type: 'INTERMEDIARY', domain: 'middleman.example' },
    { seller_id: 'mgr-1', seller_type: 'INTERMEDIARY', domain: 'www.manager.example' },
    { seller_id: 'both-own', seller_type: 'BOTH', domain: 'newsgroup.example' },
    { seller_id: 'both-other', seller_type: 'BOTH', domain: 'network.example' },
    { seller_id: 'conf', seller_type: 'PUBLISHER', is_confidential: 1 },
    { seller_id: 42, seller_type: 'INTERMEDIARY', domain: 'numeric.example' },
  ],
});

function file(host: string, text: string, kind: 'site' | 'app' = 'site'): AdsTxtFileInput {
  return { kind, host, status: 'ok', text };
}

function index(files: AdsTxtFileInput[], apps?: string): AdsTxtIndex {
  const b = buildAdsTxtIndex({
    files,
    sellers: [{ name: 'x.example.json', text: () => SELLERS_X }, { name: 'unused.example.json', text: () => { throw new Error('read although not needed'); } }],
    appDevelopers: apps ? { name: 'app-developers.txt', text: apps } : null,
    shared: true,
  });
  return AdsTxtIndex.fromCompiled(b.compiled);
}

t.test('authorize: the relationship rules of ads.txt 1.1 with sellers.json', async (t) => {
  const idx = index([
    file('news.example', [
      'OWNERDOMAIN=newsgroup.example',
      'MANAGERDOMAIN=manager.example',
      'x.example, pub-owner, DIRECT',
      'x.example, pub-other, DIRECT',
      'x.example, int-1, DIRECT',
      'x.example, mgr-1, DIRECT',
      'x.example, both-own, DIRECT',
      'x.example, both-other, DIRECT',
      'x.example, conf, DIRECT',
      'x.example, 42, DIRECT',
      'x.example, int-1-resold, RESELLER',
      'y.example, no-sellers-file, DIRECT',
    ].join('\n')),
    // No OWNERDOMAIN: the owner is the root domain the file was found on.
    file('newsgroup.example', 'x.example, pub-owner, DIRECT\nx.example, both-other, DIRECT\nx.example, int-1, DIRECT\nx.example, int-1, RESELLER\n'),
  ]);
  const a = (dmn: string, sid: string, pub: string) => idx.authorize(dmn, '', sid, pub, null);
  t.equal(a('news.example', 'x.example', 'pub-owner'), ADS_TXT_RESULT.owner);
  t.equal(a('news.example', 'x.example', 'pub-other'), ADS_TXT_RESULT.direct, 'a PUBLISHER of another domain is not contradicted');
  t.equal(a('news.example', 'x.example', 'int-1'), ADS_TXT_RESULT.direct_not_publisher, 'DIRECT line for an INTERMEDIARY account');
  t.equal(a('news.example', 'x.example', 'mgr-1'), ADS_TXT_RESULT.manager, 'the MANAGERDOMAIN intermediary');
  t.equal(a('news.example', 'x.example', 'both-own'), ADS_TXT_RESULT.owner);
  t.equal(a('news.example', 'x.example', 'both-other'), ADS_TXT_RESULT.direct_not_publisher, 'BOTH for another owner while OWNERDOMAIN is declared');
  t.equal(a('news.example', 'x.example', 'conf'), ADS_TXT_RESULT.direct, 'confidential seller: nothing to contradict');
  t.equal(a('news.example', 'x.example', '42'), ADS_TXT_RESULT.direct_not_publisher, 'numeric seller_id matches');
  t.equal(a('news.example', 'x.example', 'int-1-resold'), ADS_TXT_RESULT.reseller);
  t.equal(a('news.example', 'y.example', 'no-sellers-file'), ADS_TXT_RESULT.direct);
  t.equal(a('news.example', 'x.example', 'pub-unknown'), ADS_TXT_RESULT.seller_not_listed);
  t.equal(a('news.example', 'z.example', 'pub-owner'), ADS_TXT_RESULT.seller_not_listed, 'right account, wrong system');
  t.equal(a('newsgroup.example', 'x.example', 'pub-owner'), ADS_TXT_RESULT.owner, 'owner defaults to the root domain');
  t.equal(a('newsgroup.example', 'x.example', 'both-other'), ADS_TXT_RESULT.direct, 'BOTH without a declared OWNERDOMAIN is not condemned');
  t.equal(a('newsgroup.example', 'x.example', 'int-1'), ADS_TXT_RESULT.reseller, 'a RESELLER line authorises what the DIRECT line misstated');
  t.equal(a('NEWS.Example', 'X.EXAMPLE', 'PUB-OWNER'), ADS_TXT_RESULT.owner, 'case-insensitive');
});

t.test('authorize with nothing crawled: not crawled, no domain, no developer domain', async (t) => {
  const idx = index([]);
  t.equal(idx.authorize('www.pub.example', '', 'x.example', '1', null), ADS_TXT_RESULT.not_crawled);
  t.equal(idx.authorize('', '', 'x.example', '1', null), ADS_TXT_RESULT.no_domain);
  t.equal(idx.authorize('', 'com.example.app', 'x.example', '1', null), ADS_TXT_RESULT.no_developer_domain);
});

t.test('authorize: hosts, subdomains, unknowns and the placeholder', async (t) => {
  const idx = index([
    file('pub.example', 'x.example, 1, DIRECT\nSUBDOMAIN=video.pub.example\n'),
    file('video.pub.example', 'x.example, 2, DIRECT\n'),
    file('empty.example', 'placeholder.example.com, placeholder, DIRECT, placeholder\n'),
    file('garbage.example', '<html>soft 404</html>\n'),
    { kind: 'site', host: 'gone.example', status: 'no_file' },
    { kind: 'site', host: 'down.example', status: 'unavailable' },
  ]);
  const a = (dmn: string, pub = '1') => idx.authorize(dmn, '', 'x.example', pub, null);
  t.equal(a('pub.example'), ADS_TXT_RESULT.direct);
  t.equal(a('www.pub.example'), ADS_TXT_RESULT.direct, 'www. finds the root file');
  t.equal(a('a.b.c.pub.example'), ADS_TXT_RESULT.direct);
  t.equal(a('video.pub.example'), ADS_TXT_RESULT.seller_not_listed, 'a SUBDOMAIN file speaks for its subdomain');
  t.equal(a('video.pub.example', '2'), ADS_TXT_RESULT.direct);
  t.equal(a('live.video.pub.example', '2'), ADS_TXT_RESULT.direct, 'longest crawled suffix wins');
  t.equal(a('https://www.pub.example:443/page?q=1'), ADS_TXT_RESULT.direct, 'a URL passed as dmn still finds its host');
  t.equal(a('pub.example.'), ADS_TXT_RESULT.direct, 'trailing dot');
  t.equal(a('other.example'), ADS_TXT_RESULT.not_crawled);
  t.equal(a('example'), ADS_TXT_RESULT.not_crawled, 'a single label never matches');
  t.equal(a(''), ADS_TXT_RESULT.no_domain);
  t.equal(a('empty.example'), ADS_TXT_RESULT.no_seller_authorized);
  t.equal(a('garbage.example'), ADS_TXT_RESULT.unavailable, 'a file without one valid line says nothing');
  t.equal(a('gone.example'), ADS_TXT_RESULT.no_file);
  t.equal(a('down.example'), ADS_TXT_RESULT.unavailable);
  t.equal(a('xpub.example'), ADS_TXT_RESULT.not_crawled, 'suffix match is by whole labels');
});

t.test('authorize: supply-chain nodes and inventory partners', async (t) => {
  const idx = index([
    file('pub.example', 'x.example, 1, DIRECT\nreseller.example, r-9, RESELLER\nINVENTORYPARTNERDOMAIN=partner.example\n'),
    file('partner.example', 'partner-ssp.example, p-1, DIRECT\n'),
  ]);
  const node = (asi: string, sid: string, hp: number) => ({ asi, sid, hp });
  t.equal(idx.authorize('pub.example', '', 'reseller.example', 'r-9', [node('x.example', '1', 1), node('reseller.example', 'r-9', 1)]), ADS_TXT_RESULT.reseller);
  t.equal(
    idx.authorize('pub.example', '', 'reseller.example', 'r-9', [node('wrapper.example', 'w-1', 0), node('x.example', '1', 1), node('reseller.example', 'r-9', 1)]),
    ADS_TXT_RESULT.reseller,
    'hp=0 nodes need no ads.txt line',
  );
  t.equal(
    idx.authorize('pub.example', '', 'reseller.example', 'r-9', [node('unlisted.example', '7', 1), node('reseller.example', 'r-9', 1)]),
    ADS_TXT_RESULT.schain_node_not_listed,
  );
  t.equal(idx.authorize('pub.example', '', 'partner-ssp.example', 'p-1', null), ADS_TXT_RESULT.inventory_partner);
  t.equal(idx.authorize('pub.example', '', 'partner-ssp.example', 'p-2', null), ADS_TXT_RESULT.seller_not_listed);
  t.equal(idx.authorize('pub.example', '', 'x.example', ' 1 ', [node(' x.example ', '1 ', 1)]), ADS_TXT_RESULT.direct, 'blanks around values are ignored');
});

t.test('authorize: apps through the operator developer-domain list', async (t) => {
  const idx = index(
    [file('games.example', 'x.example, 1, DIRECT\n', 'app'), file('games.example', 'x.example, 2, DIRECT\n', 'site')],
    '# bundle  developer\ncom.games.puzzle games.example\n123456789, https://www.games.example/contact\ncom.other.app other.example\nbroken-line\n',
  );
  t.equal(idx.authorize('', 'com.games.puzzle', 'x.example', '1', null), ADS_TXT_RESULT.direct, 'app-ads.txt, not ads.txt');
  t.equal(idx.authorize('games.example', 'com.games.puzzle', 'x.example', '2', null), ADS_TXT_RESULT.seller_not_listed, 'an app reads app-ads.txt even with dmn');
  t.equal(idx.authorize('', '123456789', 'x.example', '1', null), ADS_TXT_RESULT.direct, 'developer URL reduced to its root domain');
  t.equal(idx.authorize('', 'COM.GAMES.PUZZLE', 'x.example', '1', null), ADS_TXT_RESULT.no_developer_domain, 'bundle IDs are case-sensitive');
  t.equal(idx.authorize('', 'com.other.app', 'x.example', '1', null), ADS_TXT_RESULT.not_crawled);
  t.equal(idx.authorize('', 'com.unknown', 'x.example', '1', null), ADS_TXT_RESULT.no_developer_domain);
  const warnings: string[] = [];
  parseAppDevelopers('a b c\nok.app dev.example\n', 'apps.txt', warnings);
  t.match(warnings[0], /apps\.txt: 1 lines skipped/);
});

t.test('every reason has a verdict; results are shared frozen objects', async (t) => {
  for (const r of ADS_TXT_REASONS) {
    t.ok(Object.isFrozen(ADS_TXT_RESULT[r]), r);
    t.equal(ADS_TXT_RESULT[r].reason, r);
  }
  t.equal(ADS_TXT_RESULT.owner.verdict, 'authorized');
  t.equal(ADS_TXT_RESULT.inventory_partner.verdict, 'authorized');
  t.equal(ADS_TXT_RESULT.seller_not_listed.verdict, 'unauthorized');
  t.equal(ADS_TXT_RESULT.schain_node_not_listed.verdict, 'unauthorized');
  t.equal(ADS_TXT_RESULT.no_domain.verdict, 'unknown');
  t.equal(ADS_TXT_RESULT.unavailable.verdict, 'unknown');
});

t.test('the index holds at most maxRecords (the memory budget share); the rest answer unknown', async (t) => {
  const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `exchange1.example, ${tag}-${i}, RESELLER`).join('\n');
  const b = buildAdsTxtIndex({
    files: [file('first.example', lines(60, 'a')), file('big.example', lines(50, 'b')), file('small.example', lines(30, 'c'))],
    maxRecords: 100,
  });
  t.match(b.stats, { records: 90, overCap: 1, ok: 2, unavailable: 1 });
  t.match(b.warnings.join('\n'), /ads\.txt index full at 90 records \(its share of --memory-budget holds 100\): 1 files not loaded/);
  const idx = AdsTxtIndex.fromCompiled(b.compiled);
  t.equal(idx.authorize('first.example', '', 'exchange1.example', 'a-5', null), ADS_TXT_RESULT.reseller);
  t.equal(idx.authorize('big.example', '', 'exchange1.example', 'b-5', null), ADS_TXT_RESULT.unavailable, 'not loaded: unknown, never held against the request');
  t.equal(idx.authorize('small.example', '', 'exchange1.example', 'c-5', null), ADS_TXT_RESULT.reseller, 'a smaller file still fits');
  t.equal(planMemory(256, 2).adsTxtRecords, Math.floor(((256 - runtimeMb(256, 2) - nativeMb(256, 2)) * 1048576 * SHARES.adsTxt) / ADS_TXT_RECORD_BYTES), 'the cap follows --memory-budget (its share of what the heaps\' floors leave)');
});

t.test('scale and cost: 2000 files x 300 lines', async (t) => {
  const files: AdsTxtFileInput[] = [];
  for (let f = 0; f < 2000; f++) {
    const lines: string[] = [];
    for (let l = 0; l < 300; l++) lines.push(`ssp${l % 40}.example, acct-${(f * 7 + l) % 5000}, ${l % 3 ? 'RESELLER' : 'DIRECT'}`);
    files.push(file(`pub${f}.example`, lines.join('\n')));
  }
  const t0 = performance.now();
  const b = buildAdsTxtIndex({ files, shared: true });
  const buildMs = performance.now() - t0;
  const idx = AdsTxtIndex.fromCompiled(b.compiled);
  t.equal(b.stats.records, 600_000);
  t.comment(`build ${buildMs.toFixed(0)} ms, ${b.stats.pairs} pairs, ${b.stats.sellerKeys} seller keys, ${(b.stats.bytes / 1e6).toFixed(1)} MB`);
  t.ok(b.stats.bytes / b.stats.records <= ADS_TXT_RECORD_BYTES, `${(b.stats.bytes / b.stats.records).toFixed(1)} bytes per record: within the memory budget's estimate`);
  t.equal(idx.authorize('www.pub17.example', '', 'ssp3.example', `acct-${(17 * 7 + 3) % 5000}`, null).verdict, 'authorized');
  const n = 500_000;
  const t1 = performance.now();
  let ok = 0;
  for (let i = 0; i < n; i++) {
    const f = i % 2000;
    if (idx.authorize(`www.pub${f}.example`, '', 'ssp5.example', `acct-${(f * 7 + 5) % 5000}`, null).verdict === 'authorized') ok++;
  }
  const ns = ((performance.now() - t1) * 1e6) / n;
  t.comment(`authorize ${ns.toFixed(0)} ns per call (including building the test strings)`);
  t.equal(ok, n);
});
