// Start step: the reverse-DNS check of crawlers whose published list is not authoritative
// (src/data/crawler-dns-resolver.ts), on the main thread, over the lookup threads' shared
// table. `--crawler-dns off` leaves it off: those crawlers stay declared crawlers.
import type { Config } from '../base/config.ts';
import { CrawlerDnsResolver } from '../data/crawler-dns-resolver.ts';
import { log } from '../base/log.ts';
import type { BotServiceSpec } from '../signals/bot-services.ts';
import { CrawlerDns, crawlerDnsServers, type CrawlerDnsMemory } from '../signals/crawler-dns.ts';

/** Starts the check unless it is off; returns its stop. */
export function startCrawlerDns(config: Pick<Config, 'crawlerDns' | 'crawlerDnsQps'>, memory: CrawlerDnsMemory, services: () => readonly BotServiceSpec[]): () => void {
  const shared = new CrawlerDns(memory);
  const servers = crawlerDnsServers(config.crawlerDns);
  if (servers === 'off') {
    shared.setEnabled(false);
    log.info('crawler reverse DNS off (--crawler-dns off): crawlers of lists that are whole networks stay declared crawlers');
    return () => {};
  }
  const resolver = new CrawlerDnsResolver(shared, services, { servers, qps: config.crawlerDnsQps });
  resolver.start();
  log.info({ resolvers: servers ?? 'system', qps: config.crawlerDnsQps }, 'crawler reverse DNS on');
  return () => resolver.stop();
}
