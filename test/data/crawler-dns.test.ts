// Forward-confirmed reverse DNS for crawlers whose published list is a whole network
// (Yandex, Meta), exercised for real against a DNS server on loopback (test/helpers/dns-server.ts):
// the shared verdict table and request queue, the resolver's verdicts and their bounds, and
// the lookup judging by them. Addresses come from the embedded snapshot.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CrawlerDnsResolver, reverseName as ptrName, ERROR_TTL_S, NEGATIVE_TTL_S, PENDING_TTL_S, POSITIVE_TTL_S } from '../../src/data/crawler-dns-resolver.ts';
import { DNS_CONFIRMED, DNS_PENDING, DNS_REFUTED, DNS_UNKNOWN, serviceKey, type BotServiceSpec } from '../../src/signals/bot-services.ts';
import { CrawlerDns, DNS_QUEUE_SLOTS, addressWords, allocateCrawlerDns, checkCrawlerDns, crawlerDnsServers } from '../../src/signals/crawler-dns.ts';
import { parseIp } from '../../src/signals/ip-address.ts';
import { startDnsServer, reverseName } from '../helpers/dns-server.ts';
import { until } from '../helpers/until.ts';
import { addressIn, engineOver, explain, RESIDENTIAL } from '../helpers/bots.ts';

const crawlers = JSON.parse(readFileSync(new URL('../../data/bot-ip-blocks/crawlers.json', import.meta.url), 'utf8')) as {
  services: Record<string, { ipv4: string[]; ipv6: string[]; rdns_patterns: string[]; ip_list_authoritative: boolean }>;
};
const yandex = crawlers.services.Yandex!;
const YANDEX_UA = 'Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)';
const words = (ip: string) => {
  const w = new Int32Array(4);
  addressWords(parseIp(ip)!, w);
  return [...w];
};
const spec = (over: Partial<BotServiceSpec>): BotServiceSpec => ({
  name: 'Yandex', slug: 'yandex', list: 'crawlers', listSource: 'x', listDate: 'd', sourceUrl: '', changedAt: '', uaPatterns: ['*YandexBot*'],
  rdnsPatterns: yandex.rdns_patterns, authoritative: false, rangesFrom: '', ranges: 1, ...over,
});

t.test('the snapshot marks Yandex as not authoritative, with hostname patterns', async (t) => {
  t.equal(yandex.ip_list_authoritative, false);
  t.ok(yandex.rdns_patterns.length > 0);
});

t.test('--crawler-dns values', async (t) => {
  for (const good of ['off', 'system', '127.0.0.1', '127.0.0.1:5353', '[::1]:53', '::1', '9.9.9.9,1.1.1.1:53']) t.equal(checkCrawlerDns(good), undefined, good);
  for (const bad of ['', 'on', 'dns.example', '127.0.0.1:0', '127.0.0.1:70000', '[::1', '1.2.3']) t.type(checkCrawlerDns(bad), 'string', bad);
  t.equal(crawlerDnsServers('off'), 'off');
  t.equal(crawlerDnsServers('system'), null);
  t.same(crawlerDnsServers('127.0.0.1:5353, [::1]:53'), ['127.0.0.1:5353', '[::1]:53']);
});

t.test('the shared table: verdicts with expiry, the request queue bounded', async (t) => {
  const dns = new CrawlerDns(allocateCrawlerDns());
  const ip = parseIp('5.45.207.1')!;
  const key = serviceKey('yandex');
  t.equal(dns.state(ip, key, 1000), DNS_UNKNOWN);
  dns.put(words('5.45.207.1'), key, DNS_CONFIRMED, 2000, 1000);
  t.equal(dns.state(ip, key, 1999), DNS_CONFIRMED);
  t.equal(dns.state(ip, key, 2000), DNS_UNKNOWN, 'expired');
  t.equal(dns.state(ip, serviceKey('meta-externalagent'), 1000), DNS_UNKNOWN, 'per service');
  dns.put(words('5.45.207.1'), key, DNS_REFUTED, 5000, 1000);
  t.equal(dns.state(ip, key, 1000), DNS_REFUTED, 'replaced in place');
  const v6 = parseIp('2a02:6b8::1')!;
  dns.put(words('2a02:6b8::1'), key, DNS_CONFIRMED, 5000, 1000);
  t.equal(dns.state(v6, key, 1000), DNS_CONFIRMED);
  // A crowded neighbourhood gives up the entry that expires first: the table stays its size.
  for (let i = 0; i < 20_000; i++) dns.put([0, 0, 0xffff, i], key, DNS_REFUTED, 3000 + i, 1000);
  t.equal(dns.state({ v: 4, n: 19_999 }, key, 1000), DNS_REFUTED, 'the latest is kept');
  // The queue: bounded, a full slot drops the request.
  for (let i = 0; i < DNS_QUEUE_SLOTS + 50; i++) dns.ask({ v: 4, n: i }, key);
  const asked = dns.drain();
  t.equal(asked.length, DNS_QUEUE_SLOTS, 'at most the queue');
  t.equal(dns.drain().length, 0, 'drained');
  t.same(asked[0], { words: [0, 0, 0xffff, 0], service: key });
});

t.test('forward-confirmed reverse DNS against a local server: confirmed, refuted, failed', async (t) => {
  const good = addressIn(yandex.ipv4[0]!);
  const liar = addressIn(yandex.ipv4[1]!);
  const wrongName = addressIn(yandex.ipv4[2]!);
  const none = addressIn(yandex.ipv4[3]!);
  const good6 = addressIn(yandex.ipv6[0]!);
  const server = await startDnsServer({
    ptr: {
      [reverseName(good)]: ['spider-5-45-207-1.yandex.com'],
      [reverseName(liar)]: ['spider-x.yandex.com'],
      [reverseName(wrongName)]: ['host.evil.example'],
      [reverseName(good6)]: ['spider-v6.yandex.net'],
    },
    a: { 'spider-5-45-207-1.yandex.com': [good], 'spider-x.yandex.com': ['192.0.2.1'] },
    aaaa: { 'spider-v6.yandex.net': [parseIp(good6)!.v === 6 ? good6 : '::1'] },
  });
  t.teardown(() => server.close());
  const dns = new CrawlerDns(allocateCrawlerDns());
  const r = new CrawlerDnsResolver(dns, () => [spec({})], { servers: [server.address], qps: 1000, timeoutMs: 300, tries: 1 });
  const patterns = yandex.rdns_patterns;
  t.equal(await r.check(parseIp(good)!, patterns), 'confirmed', 'PTR in the patterns, and its A record leads back');
  t.equal(await r.check(parseIp(good6)!, patterns), 'confirmed', 'IPv6: AAAA');
  t.equal(await r.check(parseIp(liar)!, patterns), 'refuted', "a Yandex name whose A record is another address (a forged PTR)");
  t.equal(await r.check(parseIp(wrongName)!, patterns), 'refuted', 'a PTR outside the patterns');
  t.equal(await r.check(parseIp(none)!, patterns), 'refuted', 'no PTR');
  t.ok(server.questions.some((q) => q.type === 12 && q.name === reverseName(good)), 'asked for real');
  t.equal(ptrName(parseIp(good)!), reverseName(good));
  t.equal(ptrName(parseIp('2a02:6b8::1')!), reverseName('2a02:6b8::1'));
  server.mode = 'servfail';
  t.equal(await r.check(parseIp(good)!, patterns), 'error', 'SERVFAIL: unknown, not refuted');
  server.mode = 'silent';
  t.equal(await r.check(parseIp(good)!, patterns), 'error', 'a timeout: unknown, not refuted');
  t.equal(r.counters.queries, server.questions.length, 'every query counted');
});

t.test('the resolver: requests drained, verdicts written with their TTLs, queries paced to qps', async (t) => {
  const a = addressIn(yandex.ipv4[0]!);
  const b = addressIn(yandex.ipv4[1]!);
  const server = await startDnsServer({ ptr: { [reverseName(a)]: ['spider.yandex.ru'] }, a: { 'spider.yandex.ru': [a] } });
  t.teardown(() => server.close());
  const dns = new CrawlerDns(allocateCrawlerDns());
  let now = 1_000_000_000_000;
  const key = serviceKey('yandex');
  const r = new CrawlerDnsResolver(dns, () => [spec({})], { servers: [server.address], qps: 1000, timeoutMs: 500, tries: 1 }, () => now);
  r.start();
  t.teardown(() => r.stop());
  t.equal(dns.enabled, true);
  const sec = now / 1000;
  dns.ask(parseIp(a)!, key);
  dns.ask(parseIp(a)!, key); // twice: one check
  dns.ask(parseIp(b)!, key);
  r.pump();
  t.equal(dns.state(parseIp(a)!, key, sec), DNS_PENDING, 'pending at once: lookups stop asking');
  await until('the two checks', async () => r.busy === 0 && r.counters.confirmed + r.counters.refuted === 2, 5000);
  t.equal(r.counters.asked, 2, 'the same address asked twice is one check');
  t.equal(dns.state(parseIp(a)!, key, sec), DNS_CONFIRMED);
  t.equal(dns.state(parseIp(a)!, key, sec + POSITIVE_TTL_S - 1), DNS_CONFIRMED);
  t.equal(dns.state(parseIp(a)!, key, sec + POSITIVE_TTL_S), DNS_UNKNOWN, 'positive TTL');
  t.equal(dns.state(parseIp(b)!, key, sec), DNS_REFUTED);
  t.equal(dns.state(parseIp(b)!, key, sec + NEGATIVE_TTL_S), DNS_UNKNOWN, 'negative TTL');
  // A resolver that does not answer: unknown for ERROR_TTL_S, then asked again.
  server.mode = 'silent';
  const c = addressIn(yandex.ipv4[2]!);
  dns.ask(parseIp(c)!, key);
  r.pump();
  await until('the checks', async () => r.busy === 0 && r.counters.errors === 1, 5000);
  t.equal(dns.state(parseIp(c)!, key, sec), DNS_PENDING, 'judged as a declared crawler meanwhile');
  t.equal(dns.state(parseIp(c)!, key, sec + ERROR_TTL_S), DNS_UNKNOWN);
  t.ok(PENDING_TTL_S < ERROR_TTL_S);
  r.stop();
  t.equal(dns.enabled, false, 'stopped: off');
});

t.test('queries are paced to --crawler-dns-qps', async (t) => {
  const server = await startDnsServer({});
  t.teardown(() => server.close());
  const dns = new CrawlerDns(allocateCrawlerDns());
  const r = new CrawlerDnsResolver(dns, () => [spec({})], { servers: [server.address], qps: 4, timeoutMs: 500, tries: 1 });
  const started = Date.now();
  // Eight addresses without a PTR: one query each; four at once, then four a second.
  const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => r.check({ v: 4, n: 0x05050500 + i }, yandex.rdns_patterns)));
  const took = Date.now() - started;
  t.same(new Set(outcomes), new Set(['refuted']));
  t.equal(server.questions.length, 8);
  t.ok(took >= 900, `8 queries at 4 per second took ${took} ms`);
  r.stop();
});

t.test('the lookup: a Yandex UA from inside its network is asked about, then judged by the verdict', async (t) => {
  const good = addressIn(yandex.ipv4[0]!);
  const bad = addressIn(yandex.ipv4[1]!);
  const server = await startDnsServer({ ptr: { [reverseName(good)]: ['spider-a.yandex.com'], [reverseName(bad)]: ['vm-1.cloud.example'] }, a: { 'spider-a.yandex.com': [good] } });
  t.teardown(() => server.close());
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-crawler-dns-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { engine, data, memory } = engineOver(dir);
  const dns = new CrawlerDns(memory.crawlerDns);
  // Off: inside the network, a declared crawler as before; outside it, an impersonator.
  t.match(explain(engine, good, YANDEX_UA).crawler, { service: 'Yandex', check: 'dns_off', verdict: 'unverified' });
  t.match(explain(engine, RESIDENTIAL, YANDEX_UA).crawler, { service: 'Yandex', check: 'outside', verdict: 'impersonator' });
  t.equal(dns.drain().length, 0, 'off: nothing asked');
  const r = new CrawlerDnsResolver(dns, () => data.bots.specs, { servers: [server.address], qps: 100, timeoutMs: 500, tries: 1 });
  r.start();
  t.teardown(() => r.stop());
  const first = explain(engine, good, YANDEX_UA);
  t.match(first.crawler, { check: 'dns_pending', dns: 'pending', verdict: 'unverified' }, 'not known yet: never waited for');
  t.ok(first.reasons.includes('ua_declared_bot'), 'judged as a declared crawler meanwhile');
  explain(engine, bad, YANDEX_UA);
  await until('the checks', async () => r.counters.confirmed === 1 && r.counters.refuted === 1, 5000);
  const confirmed = explain(engine, good, YANDEX_UA);
  t.match(confirmed.crawler, { service: 'Yandex', check: 'dns_confirmed', dns: 'confirmed', verdict: 'genuine', authoritative: false });
  t.equal(confirmed.category, 'declared_crawler');
  const refuted = explain(engine, bad, YANDEX_UA);
  t.match(refuted.crawler, { check: 'dns_refuted', dns: 'refuted', verdict: 'impersonator' });
  t.ok(refuted.reasons.includes('ua_crawler_spoofed'));
  t.equal(refuted.category, 'device_spoofing');
});
