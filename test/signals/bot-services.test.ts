// Who is really asking, per service: the embedded crawler and uptime-monitor lists
// (data/bot-ip-blocks/), each service's UA judged by its own ranges. Every address here is
// taken from the embedded snapshot itself, so a refreshed snapshot does not break the tests.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadBundle } from '../../src/data/bundle.ts';
import { botSnapshotMeta } from '../../src/data/bot-lists.ts';
import { BOT_CHECKS, BotListError, globSource, hostnameMatcher, parseBotList, serviceSlug } from '../../src/signals/bot-services.ts';
import { parseIp } from '../../src/signals/ip-address.ts';
import { parseCidr, addRangeList, RangeSetBuilder } from '../../src/signals/ip-ranges.ts';
import { ServiceRangeBuilder, ServiceRanges } from '../../src/signals/service-ranges.ts';
import { RESIDENTIAL, addressIn, engineOver, explain, uaOf } from '../helpers/bots.ts';

const snapshot = (f: string) => readFileSync(new URL(`../../data/bot-ip-blocks/${f}`, import.meta.url), 'utf8');

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-bots-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('the embedded snapshot: both lists, their services, the source, licence and date', async (t) => {
  const meta = botSnapshotMeta();
  t.ok(meta, 'snapshot.json is embedded');
  t.equal(meta!.licence, 'CC0-1.0');
  t.match(meta!.source, /ipverse\/bot-ip-blocks/);
  t.match(meta!.date, /^\d{4}-\d{2}-\d{2}$/);
  t.match(meta!.upstream.crawlers, /^https:\/\/raw\.githubusercontent\.com\/ipverse\/bot-ip-blocks\//);
  t.match(snapshot('LICENSE'), /CC0 1\.0 Universal/);
  t.match(snapshot('SOURCE.md'), /CC0/);
  for (const list of ['crawlers.json', 'monitoring.json']) {
    const parsed = parseBotList(snapshot(list), list);
    t.ok(parsed.services.length >= 5, `${list}: ${parsed.services.length} services`);
    t.equal(parsed.bad, 0, `${list}: every prefix is a CIDR`);
    for (const s of parsed.services) t.ok(s.uaPatterns.length > 0 && s.cidrs.length > 0, `${s.name}: UA patterns and ranges`);
  }
});

t.test('a bot-ip-blocks list that is not one is refused, naming the key', async (t) => {
  t.throws(() => parseBotList('[]', 'x.json'), BotListError);
  t.throws(() => parseBotList('{"services":{}}', 'x.json'), /names no service/);
  t.throws(() => parseBotList('{"services":{"A":{"user_agent_patterns":"A"}}}', 'x.json'), /services\["A"\]\.user_agent_patterns: must be an array/);
  t.throws(() => parseBotList('{"services":{"A":{"user_agent_patterns":["*"]}}}', 'x.json'), /is not a pattern/);
  t.throws(() => parseBotList('{"services":{"A":{"ip_list_authoritative":"yes"}}}', 'x.json'), /ip_list_authoritative: must be true or false/);
  t.throws(() => parseBotList('{"services":{"A b":{},"a-B":{}}}', 'x.json'), /a second service named a-b/);
  t.throws(() => parseBotList('{"services":{"A":{"ipv4":["10.0.0.0/33","x"]}}}', 'x.json'), /2 of 2 prefixes are not CIDRs/);
  t.equal(serviceSlug('Google (special)'), 'google-special');
  t.equal(serviceSlug('updown.io'), 'updown-io');
});

t.test('UA globs and hostname patterns', async (t) => {
  const re = (g: string) => new RegExp(globSource(g));
  t.ok(re('*Googlebot*').test('Mozilla/5.0 (compatible; Googlebot/2.1)'));
  t.notOk(re('*Googlebot*').test('Mozilla/5.0 (compatible; googlebot/2.1)'), 'case as the operators write it');
  t.ok(re('Pingdom*').test('Pingdom.com_bot_version_1.4'));
  t.notOk(re('Pingdom*').test('x Pingdom'), 'anchored where the glob has no *');
  t.ok(re('*a.b?c*').test('xxa.bXcxx') && !re('*a.b?c*').test('xxaXbXcxx'), 'a dot is a dot, ? one character');
  const host = hostnameMatcher(['crawl-*.googlebot.com', '*.google.com']);
  t.ok(host('crawl-66-249-66-1.googlebot.com.'));
  t.ok(host('RATE-LIMITED-PROXY-66-249-90-77.GOOGLE.COM'));
  t.notOk(host('crawl-1.googlebot.com.evil.example'));
  t.notOk(host('google.com.evil.example'));
});

t.test('service ranges: overlapping services, IPv4 and IPv6, one binary search', async (t) => {
  const b = new ServiceRangeBuilder(40);
  const add = (c: string, s: number) => b.add(parseCidr(c) as never, s);
  add('10.0.0.0/16', 0);
  add('10.0.1.0/24', 39);
  add('2001:db8::/32', 33);
  add('2001:db8:1::/48', 0);
  const r = ServiceRanges.fromCompiled(b.build({ shared: true }));
  const has = (ip: string, s: number) => r.has(parseIp(ip)!, s);
  t.ok(has('10.0.0.1', 0) && !has('10.0.0.1', 39));
  t.ok(has('10.0.1.9', 0) && has('10.0.1.9', 39), 'both services where they overlap');
  t.ok(has('10.0.255.255', 0) && !has('10.1.0.0', 0));
  t.ok(has('2001:db8:1::5', 0) && has('2001:db8:1::5', 33) && !has('2001:db8:2::5', 0) && has('2001:db8:2::5', 33));
  t.notOk(has('192.0.2.1', 0));
  t.notOk(ServiceRanges.empty.has(parseIp('10.0.0.1')!, 0));
});

t.test('a ranges file may name the service of its crawler ranges', async (t) => {
  const named: Array<[string, string]> = [];
  const into = new RangeSetBuilder();
  t.equal(addRangeList(into, '66.249.64.0/19 crawler googlebot\n192.0.2.0/24 hosting\n', 'f.txt', undefined, (c, s) => named.push([s, c.v === 4 ? String(c.start) : ''])), 2);
  t.same(named.map((n) => n[0]), ['googlebot']);
  t.equal(into.size, 1, 'the named line is not a plain crawler range');
  t.throws(() => addRangeList(into, '192.0.2.0/24 hosting googlebot\n', 'f.txt', undefined, () => {}), /only crawler ranges name a service/);
  t.throws(() => addRangeList(into, '192.0.2.0/24 crawler Google Bot\n', 'f.txt', undefined, () => {}), /expected/);
  t.throws(() => addRangeList(into, '192.0.2.0/24 crawler Googlebot\n', 'f.txt', undefined, () => {}), /not a service name/);
});

t.test('each service of the snapshot: from inside its ranges it is itself, from a residential address an impersonator', async (t) => {
  const dir = tempDir(t);
  const { engine, data } = engineOver(dir);
  const specs = data.bots.specs;
  t.ok(specs.length >= 20, `${specs.length} services loaded`);
  for (const s of specs) t.notOk(data.bots.ranges.has(parseIp(RESIDENTIAL)!, specs.indexOf(s)), `${RESIDENTIAL} is not ${s.name}'s`);
  const lists = JSON.parse(snapshot('crawlers.json')) as { services: Record<string, { ipv4: string[]; ipv6: string[] }> };
  const monitors = JSON.parse(snapshot('monitoring.json')) as { services: Record<string, { ipv4: string[]; ipv6: string[] }> };
  let judged = 0;
  for (const spec of specs) {
    const ua = uaOf(spec);
    if (ua === '') {
      t.comment(`${spec.name}: no UA of its patterns that isbot calls a bot; not asked`);
      continue;
    }
    // The UA may name another service too (New Relic's `*Synthetics*`): judged by the one whose ranges hold the address.
    const entry = (spec.list === 'monitoring' ? monitors : lists).services[spec.name]!;
    const inside = addressIn(entry.ipv4[0] ?? entry.ipv6[0]!);
    const from = explain(engine, inside, ua);
    const out = explain(engine, RESIDENTIAL, ua);
    t.equal(out.crawler?.verdict, 'impersonator', `${spec.name} from ${RESIDENTIAL}: impersonator`);
    t.ok(out.reasons.includes('ua_crawler_spoofed') && !out.reasons.includes('ua_ai_agent') && !out.reasons.includes('ua_declared_bot'), `${spec.name}: ua_crawler_spoofed alone`);
    t.equal(out.band, 'high');
    t.notOk(from.reasons.includes('ua_crawler_spoofed'), `${spec.name} from ${inside}: not an impersonator (${from.reasons.join(',')})`);
    if (spec.authoritative) {
      t.equal(from.crawler?.verdict, 'genuine', `${spec.name} from ${inside}: genuine`);
      if (from.crawler?.service === spec.name) t.equal(from.crawler.check, 'inside');
      t.equal(from.category, spec.list === 'monitoring' ? 'monitoring' : from.reasons.includes('ua_ai_agent') ? 'ai_agent' : 'declared_crawler', `${spec.name}: ${from.category}`);
    } else {
      // Reverse DNS is off here (no resolver started): inside the prefilter, a declared crawler as before.
      t.match(from.crawler, { service: spec.name, check: 'dns_off', dns: 'off', verdict: 'unverified', authoritative: false });
      t.notOk(from.reasons.includes('ua_monitor'));
    }
    judged++;
  }
  t.ok(judged >= specs.length - 3, `${judged} of ${specs.length} services judged`);
});

t.test('explain names the service, its list and date; an AI crawler impersonated is not an AI agent', async (t) => {
  const { engine, data } = engineOver(tempDir(t));
  const gpt = data.bots.specs.find((s) => s.name === 'GPTBot')!;
  const ua = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.3; +https://openai.com/gptbot)';
  const inside = addressIn((JSON.parse(snapshot('crawlers.json')) as { services: Record<string, { ipv4: string[] }> }).services.GPTBot!.ipv4[0]!);
  const real = explain(engine, inside, ua);
  t.same(real.crawler, {
    service: 'GPTBot', list: 'crawlers', listSource: 'embedded:data/bot-ip-blocks/crawlers.json', listDate: botSnapshotMeta()!.date,
    serviceChangedAt: gpt.changedAt, publishedAt: gpt.sourceUrl, rangesFrom: '', check: 'inside', authoritative: true, dns: 'not needed', verdict: 'genuine',
  });
  t.equal(real.category, 'ai_agent');
  const fake = explain(engine, RESIDENTIAL, ua);
  t.equal(fake.category, 'device_spoofing');
  t.notOk(fake.reasons.includes('ua_ai_agent'), 'an impersonated AI crawler is an impersonator');
  // Googlebot's UA from GPTBot's address: per service, not per list.
  t.match(explain(engine, inside, 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)').crawler, { service: 'Googlebot', verdict: 'impersonator' });
  // A person's UA and a bot no service names are not asked.
  t.equal(explain(engine, RESIDENTIAL, 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36').crawler, null);
  const other = explain(engine, RESIDENTIAL, 'Mozilla/5.0 (compatible; SomeOtherBot/1.0; +https://example.com)');
  t.equal(other.crawler, null);
  t.ok(other.reasons.includes('ua_declared_bot'));
  t.ok(BOT_CHECKS.length > 5);
});

t.test("operators' own ranges override the snapshot per service; unnamed crawler ranges keep working", async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'ranges'));
  const bing = 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36';
  const google = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
  const snapBing = addressIn((JSON.parse(snapshot('crawlers.json')) as { services: Record<string, { ipv4: string[] }> }).services.Bingbot!.ipv4[0]!);
  // The operator's own list of Bing's ranges (as a crawler-ipranges source with its service writes it) and an older, unnamed file.
  writeFileSync(join(dir, 'ranges', 'bing.txt'), '# ivtd ranges\n198.51.100.0/24 crawler bingbot\n');
  writeFileSync(join(dir, 'ranges', 'mine.txt'), '185.199.108.0/24 crawler\n');
  const { engine, data } = engineOver(dir);
  t.match(data.bots.specs.find((s) => s.slug === 'bingbot'), { rangesFrom: 'ranges/bing.txt', ranges: 1 });
  t.match(explain(engine, '198.51.100.7', bing).crawler, { service: 'Bingbot', check: 'inside', verdict: 'genuine', rangesFrom: 'ranges/bing.txt' });
  t.match(explain(engine, snapBing, bing).crawler, { verdict: 'impersonator' }, "the snapshot's Bing ranges are replaced, not added to");
  t.match(explain(engine, '185.199.108.9', google).crawler, { check: 'inside_unattributed', verdict: 'genuine' }, 'an unnamed crawler range counts for every service, as before');
  // A file naming a service no list has is a warning, not a failure.
  writeFileSync(join(dir, 'ranges', 'typo.txt'), '192.0.2.0/24 crawler notabot\n');
  const b = loadBundle({ dataDir: dir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
  t.match(b.warnings.join('\n'), /ranges\/typo\.txt: crawler ranges of service "notabot", which no list names/);
});

t.test('a refreshed list in <data-dir>/bot-ip-blocks/ replaces the embedded one', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'bot-ip-blocks'));
  writeFileSync(join(dir, 'bot-ip-blocks', 'monitoring.json'), JSON.stringify({ services: { Pingdom: { user_agent_patterns: ['*Pingdom.com_bot*'], ip_list_authoritative: true, ipv4: ['198.51.100.0/28'], ipv6: [] } } }));
  const { engine, data } = engineOver(dir);
  t.equal(data.bots.specs.filter((s) => s.list === 'monitoring').length, 1, 'only the refreshed monitoring list');
  t.ok(data.bots.specs.some((s) => s.name === 'Googlebot'), 'the crawlers list is still the embedded one');
  const pingdom = 'Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)';
  const r = explain(engine, '198.51.100.3', pingdom);
  t.match(r.crawler, { service: 'Pingdom', list: 'monitoring', listSource: join(dir, 'bot-ip-blocks', 'monitoring.json'), verdict: 'genuine' });
  t.equal(r.category, 'monitoring');
  t.ok(r.reasons.includes('ua_monitor'));
  writeFileSync(join(dir, 'bot-ip-blocks', 'monitoring.json'), '{"services": 1}');
  t.throws(() => loadBundle({ dataDir: dir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined }), /monitoring\.json: no "services" object.*fix or delete the file/);
});

t.test("docs/scoring.md's example sources keep the lists current: upstream URLs, each list and service named", async (t) => {
  const doc = readFileSync(new URL('../../docs/scoring.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Who is really asking'));
  const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
  t.ok(block, 'the example is there');
  const { parseSources } = await import('../../src/data/sources.ts');
  const parsed = parseSources(block!, 'docs/scoring.md');
  const meta = botSnapshotMeta()!;
  t.match(parsed.sources, [
    { kind: 'bots', list: 'crawlers', url: meta.upstream.crawlers },
    { kind: 'bots', list: 'monitoring', url: meta.upstream.monitoring },
    { kind: 'ranges', format: 'crawler-ipranges', category: 'crawler' },
    { kind: 'ranges', format: 'crawler-ipranges', service: 'perplexitybot' },
  ]);
  const specs = engineOver(tempDir(t)).data.bots.specs;
  const google = parsed.sources[2]!;
  t.ok(specs.some((s) => s.slug === 'googlebot' && s.sourceUrl === google.url), "Googlebot's list names the example's URL: its ranges go to Googlebot");
  t.ok(specs.some((s) => s.slug === 'perplexitybot'), 'the service the example names exists');
});

t.test('the one scan over the UA finds every service its patterns match, overlapping tokens included', async (t) => {
  const { data } = engineOver(tempDir(t));
  const bots = data.bots;
  const names = (ua: string) => bots.servicesOf(ua).map((i) => bots.specs[i]!.name);
  t.same(names('Datadog/Synthetics'), ['Datadog', 'New Relic'], "New Relic's *Synthetics* inside Datadog's token");
  t.same(names('Mozilla/5.0 (compatible; AdsBot-Google-Mobile)'), ['Google (special)']);
  t.same(names('Mozilla/5.0 (compatible; GPTBot/1.0) Googlebot/2.1'), ['GPTBot', 'Googlebot'], 'two services named');
  t.same(names('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'), []);
  // The scan agrees with each service's own expression, for a UA made of every pattern's token.
  for (const [i, s] of bots.specs.entries()) {
    for (const p of s.uaPatterns) {
      const ua = `Mozilla/5.0 (compatible; ${p.replace(/\*/g, '')}/1.0)`;
      const want = bots.specs.flatMap((o, j) => (new RegExp(o.uaPatterns.map(globSource).join('|')).test(ua) ? [j] : []));
      t.same(bots.servicesOf(ua), want, `${s.name}: ${p}`);
      t.ok(want.includes(i));
    }
  }
});
