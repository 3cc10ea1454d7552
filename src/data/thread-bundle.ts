// The data bundle on its way to a lookup thread and in it: shared bytes travel as they
// are, embedded files by name, and the thread reads those again from the executable's own
// pages. Apart from loading (bundle.ts), so a lookup thread loads nothing of the loader.
import type { DataBundle, DataFile } from './bundle.ts';
import { readAssetInPlace } from '../runtime/assets.ts';

const NO_BYTES = new Uint8Array(0);

function mapFiles(b: DataBundle, f: (file: DataFile) => DataFile): DataBundle {
  const one = (x: DataFile | null) => (x === null ? null : f(x));
  return {
    ...b,
    asnBin: one(b.asnBin), asnMmdb: one(b.asnMmdb), countryMmdb: f(b.countryMmdb), anonymousIpMmdb: one(b.anonymousIpMmdb),
    hostingAsns: f(b.hostingAsns), vpnAsns: f(b.vpnAsns), hostingOrgPatterns: f(b.hostingOrgPatterns), badIfas: f(b.badIfas),
    sellers: b.sellers.map(f),
  };
}

/** The bundle as posted to a lookup thread: shared bytes travel as they are, embedded ones by name. */
export function forThreads(b: DataBundle): DataBundle {
  return mapFiles(b, (f) => (f.asset !== undefined ? { ...f, bytes: NO_BYTES } : f));
}

/** In a lookup thread: the embedded files' bytes again, from the executable's pages. */
export function fromMainThread(b: DataBundle): DataBundle {
  return mapFiles(b, (f) => (f.asset !== undefined ? { ...f, bytes: readAssetInPlace(f.asset)! } : f));
}
