// `ivtd --version`: the program's version, when the binary was built, and how old the
// data it carries is. Everything is read through readAsset(), so the checkout and the
// single executable answer alike (a checkout's build date is "dev").
import { isSea, listAssets, readAsset, seaManifest } from '../runtime/assets.ts';
import { EMBEDDED } from '../data/bundle.ts';
import pkg from '../../package.json' with { type: 'json' };
import { BOT_LISTS_ASSET_DIR, botSnapshotMeta, type BotSnapshotMeta } from '../data/bot-lists.ts';
import { BOT_LISTS } from '../signals/bot-services.ts';

/** Asset key of the country MMDB package's package.json (src/runtime/asset-table.ts). */
export const COUNTRY_MMDB_PACKAGE_KEY = 'meta/country-mmdb.package.json';

export interface VersionInfo {
  version: string;
  /** ISO date of the build, or 'dev' when running from a checkout. */
  builtAt: string;
  node: string;
  data: {
    /** The embedded ASN range table (data/generated/asn.meta.json), null when not built. */
    asn: { builtAt: string; source: string; ranges: number } | null;
    /** The embedded country MMDB's npm package; its version encodes the data's date. */
    countryMmdb: { package: string; version: string } | null;
    /** Embedded sellers.json files and the seller records in them. */
    sellers: { files: number; records: number };
    /** The embedded crawler and uptime-monitor lists (data/bot-ip-blocks/): where from, licence, date, services. Null when not embedded. */
    botLists: (BotSnapshotMeta & { services: Record<string, number> }) | null;
  };
}

function json(key: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(readAsset(key)).toString('utf8'));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null; // absent or unreadable: --version says "unknown" rather than failing
  }
}

function asnInfo(): VersionInfo['data']['asn'] {
  const meta = json(EMBEDDED.asnMeta);
  if (!meta) return null;
  const src = (meta.source ?? {}) as { package?: unknown; version?: unknown };
  return {
    builtAt: String(meta.built_at ?? 'unknown'),
    source: `${String(src.package ?? 'unknown')}@${String(src.version ?? 'unknown')}`,
    ranges: Number(meta.v4_ranges ?? 0) + Number(meta.v6_ranges ?? 0),
  };
}

function countryInfo(): VersionInfo['data']['countryMmdb'] {
  const p = json(COUNTRY_MMDB_PACKAGE_KEY);
  if (!p || typeof p.name !== 'string' || typeof p.version !== 'string') return null;
  return { package: p.name, version: p.version };
}

function sellersInfo(): VersionInfo['data']['sellers'] {
  let files = 0;
  let records = 0;
  for (const key of listAssets(EMBEDDED.sellersDir)) {
    if (!key.endsWith('.json')) continue;
    files++;
    const s = json(key)?.sellers;
    if (Array.isArray(s)) records += s.length;
  }
  return { files, records };
}

function botListsInfo(): VersionInfo['data']['botLists'] {
  const meta = botSnapshotMeta();
  if (!meta) return null;
  const services: Record<string, number> = {};
  for (const list of BOT_LISTS) {
    const doc = json(`${BOT_LISTS_ASSET_DIR}${list}.json`)?.services;
    services[list] = doc !== null && typeof doc === 'object' ? Object.keys(doc).length : 0;
  }
  return { ...meta, services };
}

export function versionInfo(): VersionInfo {
  return {
    version: pkg.version,
    builtAt: isSea() ? (seaManifest().builtAt ?? 'unknown') : 'dev',
    node: process.version,
    data: { asn: asnInfo(), countryMmdb: countryInfo(), sellers: sellersInfo(), botLists: botListsInfo() },
  };
}

/** The text `ivtd --version` prints: the first line is `ivtd <version>`. */
export function formatVersion(v: VersionInfo): string {
  const { asn, countryMmdb, sellers, botLists } = v.data;
  return [
    `ivtd ${v.version}`,
    `  built          ${v.builtAt} (node ${v.node})`,
    `  asn table      ${asn ? `built ${asn.builtAt} from ${asn.source}, ${asn.ranges} ranges` : 'not built (npm run build:data)'}`,
    `  country mmdb   ${countryMmdb ? `${countryMmdb.package}@${countryMmdb.version}` : 'unknown'}`,
    `  sellers.json   ${sellers.files} files, ${sellers.records} sellers (embedded; <data-dir>/sellers/ adds to them)`,
    `  bot lists      ${botLists ? `${Object.entries(botLists.services).map(([l, n]) => `${l} ${n} services`).join(', ')}; ${botLists.source}${botLists.commit ? ` @ ${botLists.commit.slice(0, 12)}` : ''}, ${botLists.date}, licence ${botLists.licence}` : 'not embedded'}`,
    '',
  ].join('\n');
}

/** ms of an ISO date or date-time, or 0 when it is not one. */
function dateMs(s: string | undefined): number {
  const ms = s ? Date.parse(s) : NaN;
  return Number.isFinite(ms) ? ms : 0;
}

/**
 * The latest time this program provably exists at (ms): the binary's build date, the
 * embedded ASN table's build date, the embedded crawler lists' snapshot date, the embedded country database's date (its package
 * version ends in YYYYMMDDHH). A clock earlier than this runs behind.
 */
export function knownCurrentMs(v: VersionInfo = versionInfo()): number {
  let ms = dateMs(v.builtAt === 'dev' ? undefined : v.builtAt);
  ms = Math.max(ms, dateMs(v.data.asn?.builtAt));
  ms = Math.max(ms, dateMs(v.data.botLists?.date));
  const stamp = /(\d{4})(\d{2})(\d{2})\d{2}$/.exec(v.data.countryMmdb?.version ?? '');
  if (stamp) ms = Math.max(ms, dateMs(`${stamp[1]}-${stamp[2]}-${stamp[3]}T00:00:00Z`));
  return ms;
}
