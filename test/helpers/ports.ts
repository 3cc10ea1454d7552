import { once } from 'node:events';
import { createServer } from 'node:net';

/** A TCP port that was free a moment ago (for listeners that need an explicit port). */
export async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const a = s.address();
  s.close();
  if (a === null || typeof a === 'string') throw new Error('no port');
  return a.port;
}
