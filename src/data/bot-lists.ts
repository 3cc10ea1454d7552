// The published crawler and uptime-monitor lists (src/signals/bot-services.ts), loaded on the
// main thread: the embedded snapshot (data/bot-ip-blocks/, ipverse/bot-ip-blocks, CC0), each
// list replaced whole by a refreshed copy in <data-dir>/bot-ip-blocks/<list>.json (a
// `bot-ip-blocks` source writes it), and each service's ranges replaced by an operator's own
// (`<cidr> crawler <service>` lines in <data-dir>/ranges/*.txt, which `crawler-ipranges`
// sources write). The ranges are compiled once into shared arrays for every thread.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readAsset } from '../runtime/assets.ts';
import { BOT_LISTS, BotListError, parseBotList, type BotListName, type BotServiceSpec, type ParsedBotService } from '../signals/bot-services.ts';
import type { Cidr } from '../signals/ip-ranges.ts';
import { ServiceRangeBuilder, type CompiledServiceRanges } from '../signals/service-ranges.ts';

/** The embedded snapshot's folder (asset keys) and the data dir's folder of refreshed lists. */
export const BOT_LISTS_ASSET_DIR = 'data/bot-ip-blocks/';
export const BOT_LISTS_DIR = 'bot-ip-blocks';
export const BOT_SNAPSHOT_META = `${BOT_LISTS_ASSET_DIR}snapshot.json`;

/** Where the embedded snapshot came from (data/bot-ip-blocks/snapshot.json; SOURCE.md and LICENSE beside it). */
export interface BotSnapshotMeta {
  source: string;
  commit: string;
  date: string;
  licence: string;
  upstream: Partial<Record<BotListName, string>>;
}

/** The snapshot's origin, or null when the build lacks it. */
export function botSnapshotMeta(): BotSnapshotMeta | null {
  try {
    const v = JSON.parse(Buffer.from(readAsset(BOT_SNAPSHOT_META)).toString('utf8')) as Partial<BotSnapshotMeta>;
    if (typeof v.source !== 'string' || typeof v.date !== 'string' || typeof v.licence !== 'string') return null;
    return { source: v.source, commit: String(v.commit ?? ''), date: v.date, licence: v.licence, upstream: v.upstream ?? {} };
  } catch {
    return null;
  }
}

export type { BotListInfo, BotListsBundle } from '../signals/bot-services.ts';
import type { BotListInfo, BotListsBundle } from '../signals/bot-services.ts';

/** Operators' own ranges per service slug, from <data-dir>/ranges/*.txt. */
export type ServiceOverrides = Map<string, { cidrs: Cidr[]; files: string[] }>;

function loadList(dataDir: string, list: BotListName, meta: BotSnapshotMeta | null): { parsed: ParsedBotService[]; info: BotListInfo } {
  const path = join(dataDir, BOT_LISTS_DIR, `${list}.json`);
  const asset = `${BOT_LISTS_ASSET_DIR}${list}.json`;
  let body: string;
  let source: string;
  let date: string;
  if (existsSync(path)) {
    try {
      body = readFileSync(path, 'utf8');
      date = statSync(path).mtime.toISOString();
    } catch (e) {
      throw new BotListError(`cannot read ${path}: ${(e as Error).message}`);
    }
    source = path;
  } else {
    try {
      body = Buffer.from(readAsset(asset)).toString('utf8');
    } catch (e) {
      throw new BotListError(`embedded data ${asset} is missing (${(e as Error).message})`);
    }
    source = `embedded:${asset}`;
    date = meta?.date ?? 'unknown';
  }
  let parsed: ParsedBotService[];
  try {
    parsed = parseBotList(body, source).services;
  } catch (e) {
    throw new BotListError(`${(e as Error).message}${source === path ? ' (fix or delete the file)' : ''}`);
  }
  const info: BotListInfo = {
    list, source, date, licence: meta?.licence ?? 'CC0-1.0',
    services: parsed.length, ranges: parsed.reduce((n, s) => n + s.cidrs.length, 0), bytes: Buffer.byteLength(body),
  };
  return { parsed, info };
}

/**
 * Every list, each service once (a later list's service of the same slug replaces an
 * earlier one's), its ranges the operator's own when a ranges file names it. Throws
 * BotListError naming the file when one is unusable. `warnings` gains a line per service an
 * operator's file names that no list has.
 */
export function loadBotLists(dataDir: string, overrides: ServiceOverrides, warnings: string[]): BotListsBundle {
  const meta = botSnapshotMeta();
  const bySlug = new Map<string, { s: ParsedBotService; list: BotListName; info: BotListInfo }>();
  const lists: BotListInfo[] = [];
  for (const list of BOT_LISTS) {
    const { parsed, info } = loadList(dataDir, list, meta);
    lists.push(info);
    for (const s of parsed) bySlug.set(s.slug, { s, list, info });
  }
  for (const [slug, o] of overrides) {
    if (!bySlug.has(slug)) warnings.push(`${o.files.join(', ')}: crawler ranges of service "${slug}", which no list names (ivtd data status lists the services): not used`);
  }
  const entries = [...bySlug.values()];
  const builder = new ServiceRangeBuilder(entries.length);
  const specs: BotServiceSpec[] = entries.map(({ s, list, info }, i) => {
    const own = overrides.get(s.slug);
    const cidrs = own ? own.cidrs : s.cidrs;
    for (const c of cidrs) builder.add(c, i);
    return {
      name: s.name, slug: s.slug, list, listSource: info.source, listDate: info.date, sourceUrl: s.sourceUrl, changedAt: s.changedAt,
      uaPatterns: s.uaPatterns, rdnsPatterns: s.rdnsPatterns, authoritative: s.authoritative,
      rangesFrom: own ? own.files.join(', ') : '', ranges: cidrs.length,
    };
  });
  return { specs, compiled: builder.build({ shared: true }), lists };
}
