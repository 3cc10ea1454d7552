// `ivtd data update` and `ivtd data status`: the data refresher run once from the command
// line (cron, first setup), and what it last did per source. A server running on the data
// dir is told to reload afterwards over the control socket.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../base/config.ts';
import { SOURCES_FILE } from '../data/sources.ts';
import { refresherFor, type RefreshReport, type RefreshStatus } from '../data/refresh.ts';
import { ControlUnavailableError, sendControl } from '../provisioning/control.ts';
import { botSnapshotMeta, loadBotLists, type BotListInfo, type BotSnapshotMeta, type ServiceOverrides } from '../data/bot-lists.ts';
import { addRangeList, RangeSetBuilder } from '../signals/ip-ranges.ts';

export const DATA_USAGE = {
  update: {
    usage: 'data update [--json]',
    summary:
      'Fetch every source of the sources file now (IP ranges, MaxMind, sellers.json, due ads.txt); a running server reloads.\n' +
      '      Without a sources file it fetches and reloads nothing, says so, and exits 0.',
  },
  status: {
    usage: 'data status [--json]',
    summary: 'When each data source last succeeded, how many entries it gave, and its last error; the crawler and monitor lists in use (source, licence, date).',
  },
} as const;

export interface UpdateResult {
  /** The sources file read, or null when there is none (then nothing is fetched or reloaded). */
  sourcesFile: string | null;
  report: RefreshReport;
  /** What happened to a running server: reloaded, its errors, or none running. */
  server: { reloaded: boolean; errors: string[] } | null;
}

export async function dataUpdate(config: Config): Promise<UpdateResult> {
  // --data-sources must exist (refresherFor says so); the data dir's file is optional.
  const sourcesFile = config.dataSources ?? join(config.dataDir, SOURCES_FILE);
  if (config.dataSources === undefined && !existsSync(sourcesFile)) {
    return { sourcesFile: null, report: { items: [], adsTxt: { crawled: 0, changed: 0, failed: 0 }, changed: false }, server: null };
  }
  const r = refresherFor(config);
  const report = await r.runOnce({ all: true });
  let server: UpdateResult['server'] = null;
  if (report.changed) {
    try {
      const res = await sendControl(config.dataDir, 'data.reload', {}, { timeoutMs: 120_000 });
      server = { reloaded: res.ok, errors: res.errors };
    } catch (e) {
      if (!(e instanceof ControlUnavailableError)) throw e;
    }
  }
  return { sourcesFile, report, server };
}

/** `ivtd data status`: the refresher's sources, and the crawler and monitor lists the next load uses. */
export interface DataStatus extends RefreshStatus {
  botLists: {
    /** The embedded snapshot's origin (data/bot-ip-blocks/snapshot.json). */
    snapshot: BotSnapshotMeta | null;
    lists: BotListInfo[];
    /** Services, each with its list and where its ranges come from. */
    services: Array<{ name: string; slug: string; list: string; ranges: number; authoritative: boolean; rangesFrom: string }>;
    /** The list could not be read: why (the server refuses to load it too). */
    error: string | null;
  };
}

/** The services' ranges as the data dir's ranges files replace them (as the loader reads them; errors left to it). */
function ownRanges(dataDir: string): ServiceOverrides {
  const out: ServiceOverrides = new Map();
  const dir = join(dataDir, 'ranges');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.txt')).sort();
  } catch {
    return out;
  }
  for (const f of names) {
    try {
      addRangeList(new RangeSetBuilder(), readFileSync(join(dir, f), 'utf8'), `ranges/${f}`, undefined, (c, s) => {
        let o = out.get(s);
        if (!o) out.set(s, (o = { cidrs: [], files: [] }));
        o.cidrs.push(c);
        if (!o.files.includes(`ranges/${f}`)) o.files.push(`ranges/${f}`);
      });
    } catch {
      // A bad file: the server refuses it with its line; status shows the lists without it.
    }
  }
  return out;
}

export function dataStatus(config: Config): DataStatus {
  const st = refresherFor(config).status();
  const botLists: DataStatus['botLists'] = { snapshot: botSnapshotMeta(), lists: [], services: [], error: null };
  try {
    const b = loadBotLists(config.dataDir, ownRanges(config.dataDir), []);
    botLists.lists = b.lists;
    botLists.services = b.specs.map((s) => ({ name: s.name, slug: s.slug, list: s.list, ranges: s.ranges, authoritative: s.authoritative, rangesFrom: s.rangesFrom }));
  } catch (e) {
    botLists.error = (e as Error).message;
  }
  return { ...st, botLists };
}

const when = (ms: number | null): string => (ms === null ? 'never' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'));

export function updateText(u: UpdateResult): string {
  const lines: string[] = [];
  if (u.sourcesFile === null) {
    // Not a failure: without a sources file ivtd fetches nothing by design (docs/data-sources.md, "Refreshing the data").
    return (
      'Nothing to refresh: there is no sources file (no --data-sources, and the data dir has no sources.json), so nothing was fetched\n' +
      'and no running server was told to reload. To fetch data, write a sources file (docs/data-sources.md, "Refreshing the data");\n' +
      'to make a running server re-read its config and data files, run "ivtd reload".\n'
    );
  }
  if (u.report.items.length === 0 && u.report.adsTxt.crawled === 0) {
    lines.push(`Nothing to refresh: the sources file ${u.sourcesFile} names no source (see docs/data-sources.md, "Refreshing the data").`);
  }
  for (const i of u.report.items) lines.push(`${i.result.padEnd(9)} ${i.kind.padEnd(8)} ${i.name}: ${i.detail}`);
  const a = u.report.adsTxt;
  if (a.crawled > 0) lines.push(`ads.txt   ${a.crawled} crawled, ${a.changed} changed, ${a.failed} failed`);
  if (u.server) {
    lines.push(u.server.reloaded ? 'The running server reloaded the data.' : `The running server refused the new data: ${u.server.errors.join('; ')}`);
  } else if (u.report.changed) {
    lines.push('No server is running on this data dir; the next start loads the new data.');
  } else {
    lines.push('No file changed, so no running server was told to reload.');
  }
  return `${lines.join('\n')}\n`;
}

export function statusText(s: DataStatus): string {
  const lines: string[] = [];
  if (s.sources.length === 0) lines.push('No sources configured.');
  for (const src of s.sources) {
    const entries = src.entries === null ? '' : `, ${src.entries} ${src.kind === 'maxmind' ? 'bytes' : 'entries'}`;
    lines.push(`${src.name} (${src.kind}): ${src.status}, last success ${when(src.successAt)}${entries}${src.error ? `; last error: ${src.error}` : ''}`);
  }
  const sl = s.sellers;
  if (sl.listed + sl.fromTraffic > 0) {
    lines.push(`sellers.json: ${sl.listed} listed, ${sl.fromTraffic} from traffic; ${sl.ok} ok, ${sl.failed} failed, ${sl.never} not fetched yet; oldest ${when(sl.oldestSuccessAt)}`);
  }
  if (s.adsTxt.enabled) {
    const c = (k: Record<string, number>) => `${k.ok ?? 0} ok, ${k.no_file ?? 0} no file, ${k.failed ?? 0} failed, ${k.new ?? 0} not crawled yet`;
    lines.push(`ads.txt: ${c(s.adsTxt.site)}`, `app-ads.txt: ${c(s.adsTxt.app)}`);
  }
  const b = s.botLists;
  const snap = b.snapshot;
  if (snap) lines.push(`crawler and monitor lists: embedded snapshot of ${snap.source}${snap.commit ? ` @ ${snap.commit.slice(0, 12)}` : ''} (${snap.date}, licence ${snap.licence})`);
  for (const l of b.lists) {
    lines.push(`  ${l.list}: ${l.services} services, ${l.ranges} ranges, from ${l.source}${l.source.startsWith('embedded:') ? '' : ` (refreshed ${l.date})`}`);
  }
  const own = b.services.filter((x) => x.rangesFrom !== '');
  if (own.length) lines.push(`  services whose ranges your files give: ${own.map((x) => `${x.slug} (${x.rangesFrom})`).join(', ')}`);
  if (b.services.length) lines.push(`  services: ${b.services.map((x) => x.slug + (x.authoritative ? '' : ' (reverse DNS)')).join(', ')}`);
  if (b.error) lines.push(`  unusable: ${b.error}`);
  return `${lines.join('\n')}\n`;
}
