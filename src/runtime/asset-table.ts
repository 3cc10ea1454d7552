// The one list of what the single executable carries. The build embeds exactly this;
// from a checkout, readAsset() serves the same keys from the same files, so a key that
// works in tests works in the binary. Extend these tables; nothing else needs changing.

/** A data file, or a folder of them, embedded under a key (the name readAsset() takes). */
export interface DataAsset {
  /** Asset key. Ends with '/' for a folder: its files become `key + relative path`. */
  key: string;
  /** Repo-relative source; defaults to the key itself. */
  from?: string;
  /** Folder entries only: which file names (relative paths when recursive) to take. */
  match?: RegExp;
  /** Folder entries only: descend into subfolders. */
  recursive?: boolean;
  /** Missing at build time is fine (e.g. generated files); otherwise the build fails. */
  optional?: boolean;
}

export const DATA_ASSETS: readonly DataAsset[] = [
  // Curated lists (hosting/VPN ASNs, org patterns, bad IFAs).
  { key: 'data/', match: /\.txt$/ },
  { key: 'data/sellers/', match: /\.json$/, optional: true },
  // The published crawler and uptime-monitor ranges (ipverse/bot-ip-blocks, CC0), with their source and licence.
  { key: 'data/bot-ip-blocks/', match: /^(?:[a-z]+\.json|SOURCE\.md|LICENSE)$/ },
  // Output of `npm run build:data` (asn.bin, asn.meta.json, country.mmdb ...).
  { key: 'data/generated/', match: /\.(bin|json|mmdb)$/, optional: true },
  { key: 'mmdb/country.mmdb', from: 'node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb' },
  // Its package's version is the country data's date (`ivtd --version`, src/ops/version.ts).
  { key: 'meta/country-mmdb.package.json', from: 'node_modules/@ip-location-db/geo-whois-asn-country-mmdb/package.json', optional: true },
  // The built dashboard (tools/build-dashboard.ts), served on the account API port.
  { key: 'data/generated/dashboard/', recursive: true, optional: true },
];

export type NativeName = 'uws' | 'duckdb' | 'koffi';

export interface NativeAddon {
  /** The package whose JS wrapper loads the addon; the bundle replaces it with loadNative(). */
  package: string;
  /** First file is the addon to dlopen; the rest are shared libraries it finds via $ORIGIN. */
  files: ReadonlyArray<{ name: string; from: string }>;
}

// Node 20's ABI (process.versions.modules) is 115; the build checks it runs on Node 20.
const uwsBinary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

export const NATIVE_ADDONS: Readonly<Record<NativeName, NativeAddon>> = {
  uws: {
    package: 'uWebSockets.js',
    files: [{ name: 'uws.node', from: `node_modules/uWebSockets.js/binaries/${uwsBinary}` }],
  },
  duckdb: {
    package: '@duckdb/node-bindings',
    files: [
      { name: 'duckdb.node', from: `node_modules/@duckdb/node-bindings-${process.platform}-${process.arch}/duckdb.node` },
      { name: 'libduckdb.so', from: `node_modules/@duckdb/node-bindings-${process.platform}-${process.arch}/libduckdb.so` },
    ],
  },
  // An FFI, for one call at start: mallopt (src/runtime/malloc-arenas.ts). The glibc build.
  koffi: {
    package: 'koffi',
    files: [{ name: 'koffi.node', from: `node_modules/@koromix/koffi-${process.platform}-${process.arch}/${process.platform}_${process.arch}/koffi.node` }],
  },
};

export type WorkerRole = 'lookup' | 'probe';

/** Worker thread code, repo-relative. Each file does its work at top level (reads workerData/parentPort). */
export const WORKER_ROLES: Readonly<Record<WorkerRole, string>> = {
  lookup: 'src/prebid/worker-main.ts',
  // The build pipeline's self-test (tools/probe.ts, test/runtime/sea.test.ts), never in the app's binary.
  probe: 'tools/probe-worker.ts',
};

/** Keys the build adds for the runtime itself. */
export const MANIFEST_KEY = 'ivtd/manifest.json';
export const BUNDLE_KEY = 'ivtd/bundle.cjs';

/** Written by the build into MANIFEST_KEY: SEA (Node 20) cannot list its own assets. */
export interface SeaManifest {
  /** Every data asset key, sorted. */
  assets: string[];
  natives: Record<NativeName, { hash: string; files: Array<{ name: string; key: string; size: number }> }>;
  bundle: { hash: string; size: number };
  /** When the binary was built (ISO; SOURCE_DATE_EPOCH when set, for reproducible builds). */
  builtAt?: string;
}

export function nativeAssetKey(name: NativeName, file: string): string {
  return `native/${name}/${file}`;
}
