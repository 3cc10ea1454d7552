// Reads one file out of a .tar.gz (MaxMind ships each database as
// <Edition>_<date>/<Edition>.mmdb in a tar.gz). Node has gzip but no tar: this reads the
// ustar/GNU/pax headers it needs (name, size, type), nothing else, within a size cap.
import zlib from 'node:zlib';

export class TarError extends Error {
  override name = 'TarError';
}

const BLOCK = 512;

function field(h: Buffer, off: number, len: number): string {
  const end = h.indexOf(0, off);
  return h.toString('utf8', off, end >= off && end < off + len ? end : off + len);
}

function octal(h: Buffer, off: number, len: number): number {
  // GNU base-256 for sizes over 8 GB: never needed here, so refused.
  if ((h[off]! & 0x80) !== 0) throw new TarError('tar entry size in base-256 form (over 8 GB) is not supported');
  const s = field(h, off, len).trim();
  if (!/^[0-7]*$/.test(s)) throw new TarError(`tar header has a bad octal field "${s.slice(0, 20)}"`);
  return s === '' ? 0 : parseInt(s, 8);
}

function checksumOk(h: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
  return sum === octal(h, 148, 8);
}

/** Decompresses a gzip buffer, refusing output over maxBytes. */
export function gunzipLimited(gz: Buffer, maxBytes: number): Buffer {
  try {
    return zlib.gunzipSync(gz, { maxOutputLength: maxBytes });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE') throw new TarError(`decompressed archive is over ${maxBytes} bytes`);
    throw new TarError(`not a gzip file (${err.message})`);
  }
}

/** The first regular file whose path ends with `suffix`, with its path; throws TarError otherwise. */
export function extractFromTar(tar: Buffer, suffix: string): { path: string; data: Buffer } {
  let off = 0;
  let longName: string | null = null;
  let paxPath: string | null = null;
  while (off + BLOCK <= tar.length) {
    const h = tar.subarray(off, off + BLOCK);
    if (h.every((b) => b === 0)) break; // end-of-archive marker
    if (!checksumOk(h)) throw new TarError(`tar header at byte ${off} has a bad checksum (truncated or not a tar file)`);
    const type = String.fromCharCode(h[156]!);
    const size = octal(h, 124, 12);
    const dataStart = off + BLOCK;
    const dataEnd = dataStart + size;
    if (dataEnd > tar.length) throw new TarError(`tar entry at byte ${off} runs past the end of the archive (truncated)`);
    const data = tar.subarray(dataStart, dataEnd);
    off = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'L') {
      longName = data.toString('utf8').replace(/\0+$/, '');
      continue;
    }
    if (type === 'x') {
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(data.toString('utf8'));
      paxPath = m ? m[1]! : null;
      continue;
    }
    if (type === 'g') continue;
    const prefix = field(h, 345, 155);
    const name = paxPath ?? longName ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    longName = null;
    paxPath = null;
    if ((type === '0' || type === '\0') && name.endsWith(suffix)) return { path: name, data: Buffer.from(data) };
  }
  throw new TarError(`no *${suffix} file in the archive`);
}
