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

/**
 * A free TCP port below the kernel's ephemeral range (32768 and up on Linux), for a server
 * that stops and starts again on the same port: a port from freePort() can meanwhile become
 * the local end of some other process's outgoing connection, and the restart then fails
 * with "address already in use". Ports here are never handed out that way.
 */
export async function freeFixedPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const s = createServer();
    const ok = await new Promise<boolean>((resolve) => {
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) {
      await new Promise((r) => s.close(r));
      return port;
    }
  }
  return freePort();
}
