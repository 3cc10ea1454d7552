// The whole texts the CLI reads (a password on standard input, a --file or `--file -`):
// bounded, so a device or a pipe that never ends cannot fill the memory; decoded once over
// all the bytes, so a character cut between two chunks of a pipe stays one character; and
// refused when they are not UTF-8, never stored with U+FFFD in place of what was sent.
import { createReadStream } from 'node:fs';
import { UsageError } from './args.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * `source` to its end as UTF-8 text (a leading byte-order mark dropped). UsageError, naming
 * `what`, past `max` bytes (`tooLarge` says why that is the bound) or when it is not UTF-8.
 */
export async function readText(source: AsyncIterable<string | Buffer>, max: number, what: string, tooLarge: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    size += bytes.byteLength;
    // (Leaving the loop ends the stream: nothing more is read.)
    if (size > max) throw new UsageError(`${what} is over ${max} bytes, ${tooLarge}`);
    chunks.push(bytes);
  }
  try {
    return utf8.decode(Buffer.concat(chunks, size));
  } catch {
    throw new UsageError(`${what} is not UTF-8 text`);
  }
}

/** A file's bytes as readText reads them. */
export function fileChunks(path: string): AsyncIterable<Buffer> {
  return createReadStream(path);
}
