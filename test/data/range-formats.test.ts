import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatCidr } from '../../src/signals/ip-ranges.ts';
import { MAX_BAD_SHARE, findServiceTagsLink, parseRangeSource, type RangeFormat, type RangeFilter } from '../../src/data/range-formats.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, '..', 'fixtures', 'refresh', name), 'utf8');
const cidrs = (format: RangeFormat, body: string, filter: RangeFilter = {}) => parseRangeSource(format, body, filter).cidrs.map(formatCidr);

t.test('each published format', async (t) => {
  t.same(cidrs('aws-ip-ranges', fixture('aws-ip-ranges.json')), ['198.18.0.0/24', '198.18.0.0/24', '198.18.4.0/22', '2001:db8:a000:0:0:0:0:0/36']);
  t.same(cidrs('aws-ip-ranges', fixture('aws-ip-ranges.json'), { services: ['EC2'] }), ['198.18.0.0/24', '2001:db8:a000:0:0:0:0:0/36'], 'service filter');
  t.same(cidrs('gcp-cloud', fixture('gcp-cloud.json')), ['198.18.16.0/20', '2001:db8:b000:0:0:0:0:0/36']);
  t.same(cidrs('azure-service-tags', fixture('azure-service-tags.json')), ['198.18.32.0/20', '2001:db8:c000:0:0:0:0:0/36', '198.18.40.0/21', '198.18.64.1/32']);
  t.same(cidrs('azure-service-tags', fixture('azure-service-tags.json'), { tags: ['AzureCloud'] }), ['198.18.32.0/20', '2001:db8:c000:0:0:0:0:0/36', '198.18.40.0/21'], 'tag filter keeps regional tags');
  t.same(cidrs('oracle-ip-ranges', fixture('oracle-public-ip-ranges.json')), ['198.18.80.0/21', '198.18.88.0/24', '198.18.96.0/22']);
  t.same(cidrs('cidr-list', fixture('cloudflare-ips-v4')), ['198.18.112.0/20', '198.18.128.0/22', '2001:db8:d000:0:0:0:0:0/36']);
  t.same(cidrs('cidr-list', fixture('digitalocean-geofeed.csv')), ['198.18.136.0/22', '198.18.140.0/24', '2001:db8:e000:0:0:0:0:0/48'], 'geofeed CSV: first column');
  t.same(cidrs('tor-exit-list', fixture('torbulkexitlist')), ['203.0.113.7/32', '203.0.113.8/32', '198.51.100.200/32']);
  t.same(cidrs('tor-exit-list', fixture('tor-exit-addresses')), ['203.0.113.9/32'], 'exit-addresses form');
  t.same(cidrs('apple-private-relay', fixture('egress-ip-ranges.csv')), ['192.0.2.0/27', '192.0.2.32/27', '2001:db8:f000:0:0:0:0:0/45']);
  t.same(cidrs('cidr-list', '198.18.0.0/24\r\n198.18.1.0/24'), ['198.18.0.0/24', '198.18.1.0/24'], 'CRLF, no final newline');
});

t.test('garbage is refused with a reason', async (t) => {
  const refused: Array<[RangeFormat, string, RegExp]> = [
    ['aws-ip-ranges', '{"syncToken":"1","prefixes":[', /not JSON, so not AWS/],
    ['aws-ip-ranges', '[]', /not a JSON object/],
    ['aws-ip-ranges', '{"prefixes":[{"ip_prefix":"198.18.0.0/24"}]}', /no syncToken\/createDate/],
    ['aws-ip-ranges', '{"syncToken":"1","ipv6_prefixes":[]}', /no "prefixes" array/],
    ['aws-ip-ranges', '{"syncToken":"1","prefixes":[]}', /no usable range/],
    ['gcp-cloud', fixture('aws-ip-ranges.json'), /no syncToken\/creationTime|no usable range/],
    ['azure-service-tags', '{"values":[{"name":"X","properties":{}}]}', /has no properties\.addressPrefixes/],
    ['oracle-ip-ranges', '{"regions":[{"region":"r"}]}', /has no cidrs array/],
    // A name that is an object whose toString is no function (String() throws on it): still the reason, naming it.
    ['azure-service-tags', '{"values":[{"name":{"toString":1},"properties":{}}]}', /tag \{"toString":1\} has no properties\.addressPrefixes/],
    ['oracle-ip-ranges', '{"regions":[{"region":{"toString":1}}]}', /region \{"toString":1\} has no cidrs array/],
    ['cidr-list', '<!DOCTYPE html><html><body>Sign in</body></html>', /HTML\/XML, not a CIDR list/],
    ['cidr-list', fixture('gcp-cloud.json'), /JSON, not a CIDR list/],
    ['cidr-list', '198.18.0.0/24\n198.18.1.0/2x\n', /1 of 2 entries are not CIDRs/],
    ['cidr-list', '0.0.0.0/0\n', /no usable range.*broader than/],
    ['tor-exit-list', '203.0.113.7\n203.0.11', /1 of 2 entries are not CIDRs/],
    ['apple-private-relay', '', /no usable range/],
  ];
  for (const [fmt, body, re] of refused) t.throws(() => parseRangeSource(fmt, body), re, `${fmt}: ${body.slice(0, 40)}`);
});

t.test('a few bad entries in a long list are tolerated and counted', async (t) => {
  const n = Math.ceil(2 / MAX_BAD_SHARE);
  const lines = Array.from({ length: n }, (_, i) => `198.${18 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`);
  lines[5] = 'garbage';
  const r = parseRangeSource('tor-exit-list', lines.join('\n'));
  t.equal(r.bad, 1);
  t.equal(r.cidrs.length, n - 1);
  t.match(r.examples[0], /garbage/);
});

t.test('the Azure download page link', async (t) => {
  t.equal(findServiceTagsLink(fixture('azure-download-page.html').replace('{BASE}', 'https://download.example')), 'https://download.example/download/ServiceTags_Public_20240527.json');
  t.equal(findServiceTagsLink('<html>no link here</html>'), null);
  t.equal(findServiceTagsLink('see ServiceTags_Public.json'), null, 'a name without a URL is not a link');
});

t.test('the Azure link inside script data', async (t) => {
  const page = '<script>var d = {"url":"https:\\/\\/download.example\\/download\\/7\\/ServiceTags_Public_20240603.json"};</script>';
  t.equal(findServiceTagsLink(page), 'https://download.example/download/7/ServiceTags_Public_20240603.json');
});
